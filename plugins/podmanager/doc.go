// Package podmanager is the agent side of CNI: it serves the RemoteCNI gRPC API that
// contiv-cni calls, turns each CNI ADD/DEL into a blocking AddPod/DeletePod event for the
// controller, keeps the set of pods running on this node, and recovers it after a
// restart. It configures nothing itself: ipnet wires the pods when it handles the events.
package podmanager
