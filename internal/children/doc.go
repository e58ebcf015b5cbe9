// Package children is the one mechanism by which every owner level keeps its
// child objects: the PodCliqueSet (per replica, and for the set as a whole),
// the PodCliqueScalingGroup (per group replica) and the PodClique (per pod
// index).
//
// A level declares a table of rows (Row: how to list a kind, how to build one
// replica's objects and the owner's shared ones, how to bring an existing
// object to the template). Each pass, the level lists its rows (List), sorts
// what it found by replica once (Index), and says which of its replicas may
// get objects now (Pass). Pass.Sets turns that into plain desired-against-
// observed sets; Plan, a pure function, picks the creates, updates and
// deletes they need, within the pass's write budget (Budget); a Writer carries
// them out with owner references, UID preconditions and the API errors a
// stale cache causes tolerated.
//
// Everything here is pure except List and Writer, the thin I/O around it.
package children
