package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/copse-dev/copse/e2e/process"
)

// stateVersion changes when the state file's meaning changes, so that a
// newer copse does not misread a cluster started by an older one.
const stateVersion = 1

// state is what a cluster directory records about its processes, so that a
// later process (the CLI's status and down) can find and stop them.
type state struct {
	Version      int       `json:"version"`
	Dir          string    `json:"dir"`
	Detached     bool      `json:"detached"`
	StartedAt    time.Time `json:"startedAt"`
	APIServerURL string    `json:"apiServerURL,omitempty"`
	Kubeconfig   string    `json:"kubeconfig,omitempty"`
	Ports        Ports     `json:"ports"`
	Binaries     Binaries  `json:"binaries"`
	Topology     Topology  `json:"topology"`
	// NVIDIADRA says the simulated NVIDIA DRA driver runs (Options.NVIDIADRA).
	NVIDIADRA bool `json:"nvidiaDRA,omitempty"`
	// RealNodes are the real nodes (Options.RealNodes) and NodeImages the
	// images made for them.
	RealNodes  []realNodeState  `json:"realNodes,omitempty"`
	NodeImages NodeImages       `json:"nodeImages,omitzero"`
	Components []componentState `json:"components"`
}

type componentState struct {
	Name   string   `json:"name"`
	PID    int      `json:"pid"`
	Binary string   `json:"binary"`
	Args   []string `json:"args"`
	Log    string   `json:"log"`
}

// writeState replaces the state file atomically: a reader never sees half
// of it, even if `up` is interrupted while writing.
func writeState(path string, s state) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("encode cluster state: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("write cluster state: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write cluster state: %w", err)
	}
	return nil
}

// ErrNoCluster is returned by Load for a directory without a cluster.
var ErrNoCluster = errors.New("no cluster state")

func readState(path string) (state, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return state{}, fmt.Errorf("%w at %s", ErrNoCluster, path)
	}
	if err != nil {
		return state{}, fmt.Errorf("read cluster state: %w", err)
	}
	var s state
	if err := json.Unmarshal(data, &s); err != nil {
		return state{}, fmt.Errorf("decode cluster state %s: %w", path, err)
	}
	if s.Version != stateVersion {
		return state{}, fmt.Errorf("cluster state %s has version %d, this copse understands %d; stop those processes by hand", path, s.Version, stateVersion)
	}
	return s, nil
}

// processes turns recorded components back into stoppable processes.
func (s state) processes() []*process.Process {
	out := make([]*process.Process, 0, len(s.Components))
	for _, c := range s.Components {
		out = append(out, process.Adopt(process.Spec{Name: c.Name, Binary: c.Binary, Args: c.Args, LogPath: c.Log}, c.PID))
	}
	return out
}
