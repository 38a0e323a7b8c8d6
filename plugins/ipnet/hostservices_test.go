package ipnet

import (
	"strings"
	"testing"

	linuxl3 "github.com/contiv-vpp/contiv-vpp/api/models/linux/l3"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/nodesync"
)

// hostRoutes returns the Linux routes of kvs (nil values: deletions) by key.
func hostRoutes(kvs api.KeyValuePairs) api.KeyValuePairs {
	out := make(api.KeyValuePairs)
	for k, v := range kvs {
		if strings.HasPrefix(k, linuxl3.RoutePrefix) {
			out[k] = v
		}
	}
	return out
}

// wantHostRoute is a Linux route of the host to dst via VPP's end of the interconnect.
func wantHostRoute(dst string) api.KeyValuePairs {
	return api.KeyValuePairs{linuxl3.RouteKey(dst, "tap-vpp1"): &linuxl3.Route{
		OutgoingInterface: "tap-vpp1", Scope: linuxl3.Route_GLOBAL, DstNetwork: dst, GwAddr: "172.30.1.1",
	}}
}

// TestHostRoutesServicesAndEveryNodesIPThroughVPPWhenAsked: with routeServiceCIDRToVPP (a
// node without kube-proxy), the host routes the service CIDR, this node's IP and the VPP
// IP of every connected peer (their NodePorts) via VPP; a peer that leaves takes its
// route along; without the setting only the pod subnet is routed.
func TestHostRoutesServicesAndEveryNodesIPThroughVPPWhenAsked(t *testing.T) {
	podRoute := wantHostRoute("10.1.0.0/16")
	e := newEnv(t, tapConf+"routeServiceCIDRToVPP: true\n", envOptions{dpdk: []string{nic}, nodes: otherNodes()})
	want := union(podRoute, wantHostRoute("10.96.0.0/12"), wantHostRoute("192.168.16.1/32"),
		wantHostRoute("192.168.16.2/32"), wantHostRoute("192.168.16.3/32"))
	diffKVs(t, hostRoutes(e.mustResync()), want)

	kvs, _, err := e.update(&nodesync.NodeUpdate{NodeName: "node2", PrevState: node2()})
	if err != nil {
		t.Fatal(err)
	}
	diffKVs(t, hostRoutes(kvs), deletes(wantHostRoute("192.168.16.2/32")))

	e = newEnv(t, tapConf, envOptions{dpdk: []string{nic}, nodes: otherNodes()})
	diffKVs(t, hostRoutes(e.mustResync()), podRoute)
}
