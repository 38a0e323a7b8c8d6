package node

// AllPodCIDRs returns every pod subnet of the node, the first one first: pod_CIDRs
// when the record has it (contiv-ksr of the dual-stack release), else pod_CIDR alone
// (a record of an earlier release), nil when the node has none. The slice is the
// record's own for new records: do not change it.
func (x *Node) AllPodCIDRs() []string {
	if cidrs := x.GetPod_CIDRs(); len(cidrs) > 0 {
		return cidrs
	}
	if c := x.GetPod_CIDR(); c != "" {
		return []string{c}
	}
	return nil
}
