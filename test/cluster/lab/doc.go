// Package lab runs a multi-node Contiv-VPP cluster on one machine, driven by a real
// Kubernetes control plane: for the tests of test/cluster, for `make cluster` and for
// benchmarks. It needs root (network namespaces) and the binaries of
// scripts/k8s-control-plane.sh (kube-apiserver, kube-controller-manager, kubectl, etcd) and
// of `make build` (contiv-agent, contiv-cni, contiv-ksr, vpp-sim).
//
//	the lab's own network namespace (the host's, or the test's)
//	  etcd (Kubernetes) <── kube-apiserver (127.0.0.1, token auth, RBAC) <── kube-controller-manager
//	                              ▲   ▲    ▲                                 (endpoints, endpointslices,
//	                              │   │    └── scheduler stand-in             service accounts, GC, ...)
//	        kubectl + kubeconfig ─┘   │        (binds Pods without a node)
//	                                  ├── contiv-ksr x2 (leader election) ──> etcd (Contiv)
//	                                  └── kubelet stand-in, one per node           ▲
//	                                        │ exec contiv-cni (CNI_* + conf)      │ relay per node
//	  ─────────────────────────────────────┼───────────────────────────────────────┼──────────────
//	  netns <lab>-nodeN                    ▼ cni.sock                               │
//	    contiv-agent ── api.sock ──> vpp-sim (-linux, NIC GigabitEthernet0/8/0)     │
//	      REST 127.0.0.1:9990 (relayed to the lab's loopback), etcd 127.0.0.1:12379 ┘
//	    NIC link nic0 ── veth ──┐
//	  netns <lab>-net: bridge br0 (the node network 192.168.16.0/24)
//	    ├── <lab>-client  eth0 192.168.16.200 (an external client; routes: each pod subnet
//	    │                 via its node, ServiceIngressCIDR via every node, multipath)
//	    └── <lab>-inet    eth0 192.168.16.254 (the nodes' default gateway), lo 203.0.113.1
//	  netns <lab>-<namespace>-<pod>: a pod sandbox; its "container" answers on the pod's
//	    declared TCP/UDP ports with "<pod name> <client address> <namespace>" (Reply)
//
// A pod's network namespace is named "<lab>-<namespace>-<pod>" when its path fits the 63
// bytes the agent accepts (VPP's limit for a TAP's host namespace), else the start of
// that name and a hash: any valid pod name (namespace 63 and name 253 characters) starts.
//
// The kubelet stand-in reports pod status as kubelet does. It runs httpGet and tcpSocket
// readiness probes (from the pod's namespace); the container's HTTP switch ReadyPath
// (GET, PUT, DELETE) lets a test make a pod not ready. A deleted pod keeps serving for
// its grace period while the API shows it terminating (its endpoint serving and
// terminating), until its server exits (POST ExitPath) or the period ends; then it is
// torn down (CNI DEL), its final status written (Succeeded or Failed) and its deletion
// confirmed with grace period 0. It records kubelet's events FailedCreatePodSandBox (with
// the CNI error) and Killing.
//
// A LoadBalancer allocator (as MetalLB) gives Services of type LoadBalancer an address of
// LBPoolCIDR in status.loadBalancer.ingress (ipMode VIP, or Proxy by LBIPModeAnnotation);
// ExternalIPCIDR is left for externalIPs. The lab runs no kube-proxy: its contiv.conf sets
// routeServiceCIDRToVPP, so a node's own namespace reaches ClusterIPs and NodePorts through
// VPP. The pods' containers serve SCTP ports where the kernel has SCTP (SCTPSupported),
// and the ports of native sidecars (init containers with restartPolicy Always) too.
//
// Address families (Config.IPFamily, family.go): IPv4 for the zero Config; make
// cluster and the tests of test/cluster start dual-stack by default. A dual-stack lab
// (DualStack, IPv4 primary) gives kube-apiserver a service range of each family
// (ServiceCIDR, ServiceCIDRIPv6), kube-controller-manager --cluster-cidr of each family
// with per-family node mask sizes (it runs no node-ipam-controller: the agents' IPAM
// gives the node subnets), contiv.conf ipamConfig.ipv6 with the same ranges, the
// node network NodeNetworkIPv6 (node N has host #N on its VPP NIC), the client and
// the internet an IPv6 each (ClientIPv6, GatewayIPv6; the client routes each node's
// IPv6 pod subnet to the node's IPv6), and the pods' containers a socket of each family.
// The kubelet stand-in registers both node IPs as InternalIPs and both node subnets as
// podCIDRs, and reports both pod addresses in status.podIPs (and both node IPs in
// status.hostIPs), the primary family first, as kubelet sorts them. A single-stack
// IPv6 lab (IPv6) has only the IPv6 half and no overlay (useNoOverlay): vpp-sim does
// not simulate VXLAN over an IPv6 underlay. Single-NIC nodes are IPv4 only.
//
// Service renderer (Config.ServiceRenderer, renderer.go): contiv.conf's serviceRenderer,
// nat44 by default (IPv4 Services NAT44's, IPv6 ones cnat's) or cnat (both cnat's).
// Node.SetServiceRenderer rewrites one node's contiv.conf for its agent's next start
// (StopAgent, StartAgent), and Node.VPPCLI runs a command of vpp-sim's CLI through the
// agent (show nat44 static mappings, show cnat translation, ...).
//
// Nodes are labelled with their zone (topology.kubernetes.io/zone, Config.Zones: zone-a
// and zone-b in turn by default).
//
// No link or route is created in the lab's own namespace: the agents reach the Contiv
// etcd through a TCP relay listening on each node's loopback, and the agents' REST APIs
// are relayed to the lab's loopback (Node.RESTAddr). Unix sockets (CNI, VPP API) are files
// and work across namespaces.
//
// Node N is started, and gets its node ID, before node N+1, so node1 has ID 1 and IP
// 192.168.16.1; the kubelet stand-in registers the Node with that IP as InternalIP and the
// agent's pod subnet as podCIDR. Pods are bound to nodes either by their spec.nodeName
// or by the scheduler stand-in (fewest pods first).
//
// Traffic between nodes needs vpp-sim to bind the VPP NIC to the node's link
// (-nic NAME=LINUXIF) and to forward packets; Lab.NICBound tells whether the vpp-sim in
// use can.
//
// cluster-lab (`make cluster`) stops the lab on SIGINT or SIGTERM and when its parent (make)
// stops.
//
// Everything the lab creates - namespaces (and with them their links), processes
// (also killed by the parent-death signal if the lab's process dies), relays, goroutines
// and files - is removed by Close, also after a failed Start. Names start with a random
// "ctvlab-xxxxxx", so labs run side by side.
package lab
