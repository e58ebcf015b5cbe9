package cluster

import (
	"fmt"
	"net"
)

// Ports are the loopback ports of one cluster's components.
type Ports struct {
	EtcdClient        int `json:"etcdClient"`
	EtcdPeer          int `json:"etcdPeer"`
	APIServer         int `json:"apiServer"`
	ControllerManager int `json:"controllerManager"`
	Scheduler         int `json:"scheduler"`
	Kwok              int `json:"kwok"`
	// NVIDIADRASim serves the simulated NVIDIA DRA driver's /healthz.
	NVIDIADRASim int `json:"nvidiaDRASim,omitempty"`
}

// freePorts asks the kernel for unused ports. All listeners stay open until
// every port is chosen so that no port is handed out twice; another process
// may still grab one before the component binds it, which then shows up as
// a start failure naming the port.
func freePorts() (Ports, error) {
	ports, err := FreePorts(7)
	if err != nil {
		return Ports{}, err
	}
	return Ports{
		EtcdClient: ports[0], EtcdPeer: ports[1], APIServer: ports[2],
		ControllerManager: ports[3], Scheduler: ports[4], Kwok: ports[5], NVIDIADRASim: ports[6],
	}, nil
}

// FreePorts returns n distinct loopback ports that were free a moment ago.
// All n are held open together while they are picked, so none repeats.
func FreePorts(n int) ([]int, error) {
	ports := make([]int, n)
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("pick free port: %w", err)
		}
		listeners = append(listeners, l)
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports, nil
}
