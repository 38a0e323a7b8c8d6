// Package convert turns Kubernetes API objects (k8s.io/api types) into the protobuf models
// that contiv-ksr writes into etcd (api/k8s/...), and names the key each value
// is stored under. It is the single place that decides how a Kubernetes field maps onto
// a model field; contiv-ksr (informers) and the standalone cluster loader (objects read
// from a YAML file) both use it, so the agent cannot tell the two sources apart.
//
//	*corev1.Pod                    -> pod.Pod                      k8s/pod/<name>/namespace/<ns>
//	*corev1.Service                -> service.Service              k8s/service/<name>/namespace/<ns>
//	*discoveryv1.EndpointSlice     -> endpointslice.EndpointSlice  k8s/endpointslice/<name>/namespace/<ns>
//	[]*discoveryv1.EndpointSlice   -> endpoints.Endpoints          k8s/endpoints/<service>/namespace/<ns>
//	  of one service (LegacyEndpoints: the value agents of the previous release read)
//	*corev1.Endpoints              -> endpoints.Endpoints          (same key; cluster files only)
//	*corev1.Endpoints              -> []*discoveryv1.EndpointSlice (MirrorEndpoints; cluster files only)
//	*networkingv1.ServiceCIDR      -> servicecidr.ServiceCIDR      k8s/servicecidr/<name>
//	*corev1.Node                   -> node.Node                    k8s/node/<name>
//	*corev1.Namespace              -> namespace.Namespace          k8s/namespace/<name>
//	*networkingv1.NetworkPolicy    -> policy.Policy                k8s/policy/<name>/namespace/<ns>
//
// Dual-stack: a pod keeps every IP of status.podIPs (ip_addresses; ip_address stays the
// primary, what agents of the previous release read), a node every pod CIDR and its
// addresses of both families, a service its clusterIPs, ipFamilies and ipFamilyPolicy,
// and IPv4 and IPv6 EndpointSlices are written one value each (the legacy Endpoints
// value of a service holds its primary family only). Of a pod's annotations only those
// agents read are kept (AgentAnnotations); PodLimits bounds their values.
//
// EndpointSlice conditions are normalised as the discovery.k8s.io/v1 API tells
// consumers to read them (EndpointConditions): unset ready and serving are true, unset
// terminating is false. Nothing is capped: every endpoint of every slice is kept, and
// the legacy Endpoints value of a service holds all of them (the Endpoints API caps at
// 1,000).
//
// The functions are pure: no I/O, no clocks, no shared state; the same object always
// gives the same value (lists built from Go maps are sorted), so a writer can compare
// values to skip writes that would change nothing.
//
// Objects coming from the API server carry the defaults the server fills in; objects
// read from a file may not. Where an empty field would mean something else to the
// agent than the server default (protocol, service type, session affinity, target
// port, external traffic policy), the converters fill in that default, so both sources
// give the same value.
//
// Errors are returned for objects the model cannot represent faithfully (no name,
// a port protocol the model lacks where it would change a policy's meaning, a
// NetworkPolicy endPort the API server would refuse, an unknown selector operator);
// they name the object. The
// caller decides what to do with such an object (contiv-ksr logs, counts and skips it).
package convert
