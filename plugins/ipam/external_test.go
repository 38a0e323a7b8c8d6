package ipam

import (
	"net"
	"testing"

	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
)

const externalConf = `
ipamConfig:
  useExternalIPAM: true
  podSubnetCIDR: 10.10.0.0/16
  nodeInterconnectCIDR: 192.168.16.0/24
`

// cniResult is a CNI 1.0 IPAM result holding ip.
func cniResult(ip string) string {
	return `{"cniVersion":"1.0.0","ips":[{"address":"` + ip + `","gateway":"10.10.5.1"}],"routes":[{"dst":"0.0.0.0/0"}]}`
}

// externalPlugin returns a resynced plugin with external IPAM; node1 (ID 1) has
// podCIDR ownCIDR, node2 (ID 2) has 10.10.6.0/24.
func externalPlugin(t *testing.T, ownCIDR string, tweak ...func(*Deps)) (*Plugin, *fakeNodeSync) {
	t.Helper()
	p, ns := testPlugin(t, externalConf, 1, tweak...)
	ns.nodes["node1"].PodCIDR = ownCIDR
	ns.nodes["node2"] = &NodeInfo{ID: 2, Name: "node2", PodCIDR: "10.10.6.0/24"}
	ns.nodes["node3"] = &NodeInfo{ID: 3, Name: "node3"}
	if err := p.Resync(api.NewDBResync(), kubeState(kubePod("default/old", "10.10.5.9")), 1, nil); err != nil {
		t.Fatalf("Resync: %v", err)
	}
	return p, ns
}

func TestExternalIPAMTakesPodSubnetFromNodePodCIDR(t *testing.T) {
	p, _ := externalPlugin(t, "10.10.5.0/24")
	if p.PodSubnetThisNode().String() != "10.10.5.0/24" || p.PodGatewayIP().String() != "10.10.5.1" ||
		p.NatLoopbackIP().String() != "10.10.5.254" {
		t.Errorf("pod subnet %s, gateway %s, NAT loopback %s", p.PodSubnetThisNode(), p.PodGatewayIP(), p.NatLoopbackIP())
	}
	if p.HostInterconnectSubnetThisNode().String() != "172.30.1.0/24" {
		t.Errorf("VPP-host subnet %s still follows the node ID", p.HostInterconnectSubnetThisNode())
	}
	other, err := p.PodSubnetOtherNode(2)
	if err != nil || other.String() != "10.10.6.0/24" {
		t.Errorf("PodSubnetOtherNode(2) = %v, %v", other, err)
	}
	_, err = p.PodSubnetOtherNode(3)
	checkErr(t, err, "pod subnet of nodeID 3: node node3 has no podCIDR yet")
	_, err = p.PodSubnetOtherNode(9)
	checkErr(t, err, "pod subnet of nodeID 9: no such node")
	for ip, want := range map[string]uint32{"10.10.6.77": 2, "10.10.5.3": 1} {
		if got, err := p.NodeIDFromPodIP(net.ParseIP(ip)); err != nil || got != want {
			t.Errorf("NodeIDFromPodIP(%s) = %d, %v", ip, got, err)
		}
	}
	_, err = p.NodeIDFromPodIP(net.ParseIP("10.10.7.1"))
	checkErr(t, err, "node ID of pod IP 10.10.7.1: no node has a podCIDR holding it")
	if got := p.GetPodIP(pid("default/old")); got.String() != "10.10.5.9/32" {
		t.Errorf("pod of the Kubernetes state: %v", got)
	}
}

func TestExternalIPAMUsesTheIPOfTheCNIResult(t *testing.T) {
	p, _ := externalPlugin(t, "10.10.5.0/24")
	tests := []struct {
		name     string
		pod      string
		ipamData string
		want     string
		wantErr  string
	}{
		{"address of ips[0]", "default/a", cniResult("10.10.5.7/24"), "10.10.5.7/32", ""},
		{"same pod again", "default/a", cniResult("10.10.5.7/24"), "10.10.5.7/32", ""},
		{"CNI 0.2.0 result", "default/b", `{"cniVersion":"0.2.0","ip4":{"ip":"10.10.5.8/24"}}`, "10.10.5.8/32", ""},
		{"outside the podCIDR", "default/c", cniResult("10.10.6.7/24"), "",
			`allocate IP for pod default/c: external IPAM "host-local" gave 10.10.6.7, which is not in the podCIDR 10.10.5.0/24 of this node`},
		{"the pod gateway", "default/c", cniResult("10.10.5.1/24"), "", "10.10.5.1 is the pod gateway of 10.10.5.0/24"},
		{"the NAT loopback", "default/c", cniResult("10.10.5.254/24"), "", "10.10.5.254 is the NAT loopback of 10.10.5.0/24"},
		{"empty result", "default/c", "", "", `external IPAM "host-local": the IPAM result is empty`},
		{"not JSON", "default/c", "{", "", "the IPAM result is not valid JSON"},
		{"no addresses", "default/c", `{"cniVersion":"1.0.0","ips":[]}`, "", "the IPAM result has no addresses"},
		{"bad address", "default/c", cniResult("10.10.5.x/24"), "", `the IPAM result: "10.10.5.x/24" is not an IP address`},
		{"only IPv6", "default/c", cniResult("2001::5/64"), "", "the IPAM result has no IPv4 address (got 2001::5/64)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := p.AllocatePodIP(pid(tc.pod), "host-local", tc.ipamData)
			checkErr(t, err, tc.wantErr)
			if tc.wantErr == "" && got.String() != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
	_, err := p.AllocatePodCustomIfIP(pid("default/a"), "memif1", "")
	checkErr(t, err, "custom interface IPs are not available with external IPAM")
}

func TestExternalIPAMIsTheAuthorityOnReassignment(t *testing.T) {
	p, _ := externalPlugin(t, "10.10.5.0/24")
	// The Kubernetes state still shows "old" at .9, but the external IPAM freed it and
	// gave it to a new pod.
	got, err := p.AllocatePodIP(pid("default/new"), "host-local", cniResult("10.10.5.9/24"))
	if err != nil || got.String() != "10.10.5.9/32" {
		t.Fatalf("got %v, %v", got, err)
	}
	if p.GetPodIP(pid("default/old")) != nil {
		t.Error("the stale holder kept the address")
	}
	// A pod that gets a new address from the external IPAM moves to it.
	got, err = p.AllocatePodIP(pid("default/new"), "host-local", cniResult("10.10.5.10/24"))
	if err != nil || got.String() != "10.10.5.10/32" {
		t.Fatalf("got %v, %v", got, err)
	}
	if owner, ok := p.GetPodFromIP(net.ParseIP("10.10.5.9")); ok {
		t.Errorf("the old address is still held by %v", owner)
	}
}

func TestExternalIPAMWithoutPodCIDRWaitsForNodeUpdate(t *testing.T) {
	loop := &fakeEventLoop{}
	p, ns := externalPlugin(t, "", func(d *Deps) { d.EventLoop = loop })
	if p.PodSubnetThisNode() != nil || p.PodGatewayIP() != nil {
		t.Errorf("pod subnet %s without a podCIDR", p.PodSubnetThisNode())
	}
	_, err := p.AllocatePodIP(pid("default/a"), "host-local", cniResult("10.10.5.7/24"))
	checkErr(t, err, "allocate IP for pod default/a: the podCIDR of node node1 is not known yet (external IPAM)")

	// A NodeUpdate that brings no podCIDR of this node changes nothing.
	desc, err := p.Update(nodeUpdate{}, nil)
	if desc != "" || err != nil || len(loop.pushed()) != 0 {
		t.Fatalf("Update without podCIDR: %q, %v, %d events", desc, err, len(loop.pushed()))
	}

	ns.setPodCIDR("node1", "10.10.5.0/24")
	desc, err = p.Update(nodeUpdate{}, nil)
	checkErr(t, err, "")
	if desc != "podCIDR of this node changed from <none> to 10.10.5.0/24: Pod CIDR Change pushed" {
		t.Errorf("description %q", desc)
	}
	// Another NodeUpdate before the resync does not push the change again.
	if _, err := p.Update(nodeUpdate{}, nil); err != nil {
		t.Fatal(err)
	}
	events := loop.pushed()
	if len(events) != 1 {
		t.Fatalf("%d events pushed, want 1", len(events))
	}
	change, ok := events[0].(*PodCIDRChange)
	if !ok || change.LocalPodCIDR.String() != "10.10.5.0/24" {
		t.Fatalf("pushed %v", events[0])
	}
	if p.PodSubnetThisNode() != nil {
		t.Error("the pod subnet changed before the resync")
	}

	// The loop processes the PodCIDRChange as a resync.
	if err := p.Resync(change, kubeState(), 2, nil); err != nil {
		t.Fatal(err)
	}
	if p.PodSubnetThisNode().String() != "10.10.5.0/24" {
		t.Errorf("pod subnet after PodCIDRChange: %s", p.PodSubnetThisNode())
	}
	if _, err := p.AllocatePodIP(pid("default/a"), "host-local", cniResult("10.10.5.7/24")); err != nil {
		t.Error(err)
	}
	if desc, _ := p.Update(nodeUpdate{}, nil); desc != "" || len(loop.pushed()) != 1 {
		t.Errorf("an unchanged podCIDR pushed an event: %q", desc)
	}

	// A changed podCIDR moves the node; the old allocations go with the old subnet.
	ns.setPodCIDR("node1", "10.10.9.0/24")
	if _, err := p.Update(nodeUpdate{}, nil); err != nil {
		t.Fatal(err)
	}
	if err := p.Resync(loop.pushed()[1], kubeState(), 3, nil); err != nil {
		t.Fatal(err)
	}
	if p.PodSubnetThisNode().String() != "10.10.9.0/24" || p.GetPodIP(pid("default/a")) != nil {
		t.Errorf("after the move: subnet %s, pod a %s", p.PodSubnetThisNode(), p.GetPodIP(pid("default/a")))
	}
}

func TestExternalIPAMPodCIDRProblems(t *testing.T) {
	loop := &fakeEventLoop{err: errPushRefused}
	p, ns := externalPlugin(t, "", func(d *Deps) { d.EventLoop = loop })
	ns.setPodCIDR("node1", "10.10.5.0/24")
	_, err := p.Update(nodeUpdate{}, nil)
	checkErr(t, err, "ipam: push Pod CIDR Change for podCIDR 10.10.5.0/24: event queue full")
	loop.mu.Lock()
	loop.err = nil
	loop.mu.Unlock()
	if _, err := p.Update(nodeUpdate{}, nil); err != nil || len(loop.pushed()) != 1 {
		t.Errorf("retry after a refused push: %v, %d events", err, len(loop.pushed()))
	}

	ns.setPodCIDR("node1", "10.10.5.0/33")
	_, err = p.Update(nodeUpdate{}, nil)
	checkErr(t, err, `ipam: podCIDR "10.10.5.0/33" of node node1`)
	err = p.Resync(api.NewDBResync(), kubeState(), 2, nil)
	checkErr(t, err, `ipam resync: podCIDR "10.10.5.0/33" of node node1`)

	ns.setPodCIDR("node1", "2001::/64")
	err = p.Resync(api.NewDBResync(), kubeState(), 2, nil)
	checkErr(t, err, "podCIDR 2001::/64 of node node1 is not of the IP family of podSubnetCIDR 10.10.0.0/16")
}

func TestExternalIPAMWithoutEventLoopOnlyLogs(t *testing.T) {
	p, ns := externalPlugin(t, "10.10.5.0/24")
	ns.setPodCIDR("node1", "10.10.8.0/24")
	if desc, err := p.Update(nodeUpdate{}, nil); desc != "" || err != nil {
		t.Errorf("Update = %q, %v", desc, err)
	}
	if err := p.Resync(api.NewDBResync(), kubeState(), 2, nil); err != nil || p.PodSubnetThisNode().String() != "10.10.8.0/24" {
		t.Errorf("the next resync did not apply the podCIDR: %v", err)
	}
}
