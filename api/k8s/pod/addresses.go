package pod

// Pod annotations that contiv agents read (upstream Contiv-VPP's keys). contiv-ksr
// reflects these and no other: see AgentAnnotations.
const (
	// CustomIfAnnotation asks for extra pod interfaces:
	// "name/type[/network], ..." with type tap, veth or memif.
	CustomIfAnnotation = "contivpp.io/custom-if"
	// MicroserviceLabelAnnotation names the microservice label under which the
	// pod-side configuration of memif interfaces is published.
	MicroserviceLabelAnnotation = "contivpp.io/microservice-label"
)

// AgentAnnotations lists the annotation keys contiv-ksr reflects; every other pod
// annotation is left out of the model (agents never read them, and an annotation may
// hold 256 KiB).
func AgentAnnotations() []string {
	return []string{CustomIfAnnotation, MicroserviceLabelAnnotation}
}

// IsAgentAnnotation tells whether key is one of AgentAnnotations.
func IsAgentAnnotation(key string) bool {
	return key == CustomIfAnnotation || key == MicroserviceLabelAnnotation
}

// AllIPAddresses returns every IP of the pod, the primary first: ip_addresses when the
// record has it (contiv-ksr of the dual-stack release), else ip_address alone (a
// record of an earlier release), nil when the pod has no IP yet. The slice is the
// record's own for new records: do not change it.
//
// Rolling upgrade: a new contiv-ksr writes both fields (ip_address =
// ip_addresses[0]), so an agent of the previous release, which reads ip_address only,
// keeps working; a new agent reading a record of the previous contiv-ksr gets the
// primary IP through this fallback.
func (x *Pod) AllIPAddresses() []string {
	if ips := x.GetIpAddresses(); len(ips) > 0 {
		return ips
	}
	if ip := x.GetIpAddress(); ip != "" {
		return []string{ip}
	}
	return nil
}
