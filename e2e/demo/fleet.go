package main

import "github.com/copse-dev/copse/e2e/cluster"

// demoFleet is the demo's GB200-like fleet: one zone of two blocks, each of
// two NVL72 racks of 18 nodes x 4 GPUs; every rack is one NVLink domain
// (nvidia.com/gpu.clique). 72 nodes, 288 GPUs. Two blocks of two racks make
// both the block and the rack level mean something to packing; a second zone
// would double the nodes and the cluster's start (21 s for 72 nodes, 34 s for
// 144 on 2 cores) for a level a gang rarely spans.
func demoFleet() cluster.Topology {
	fleet := cluster.DefaultTopology() // GB200 compute trays: 4 GPUs each
	fleet.Zones, fleet.BlocksPerZone, fleet.RacksPerBlock, fleet.NodesPerRack = 1, 2, 2, 18
	return fleet
}
