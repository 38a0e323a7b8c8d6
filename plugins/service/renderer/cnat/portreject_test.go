package cnat

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	vpp_cnat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/cnat"
	l3 "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l3"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/internal/rejects"
	st "github.com/contiv-vpp/contiv-vpp/plugins/service/internal/servicetest"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/renderer"
)

// TestPortWithoutEndpointsIsDroppedAndWouldBeRejectedByAnInterposedVIP records, by
// traffic, the per-port reject difference of SERVICES.md. default/web exposes
// TCP 80 (endpoint pod1) and UDP 53 (no endpoint). With the renderer's values the
// cluster IP is cnat's exclusive VIP without a route: UDP 53 is dropped, no ICMP
// (Kubernetes rejects it). With the same translation made is_real_ip (an interposed
// client) and an ICMP_PROHIBIT /32 in table 0, TCP 80 is still translated and UDP 53
// is refused at once: the interposed client stacks on the route's forwarding
// (cnat_client.c cnat_client_add: FIB_ENTRY_FLAG_INTERPOSE; cnat_node_vip.c: an
// untranslated packet follows cc_parent). The renderer does not do it: see
// SERVICES.md, "Per-port rejects with cnat".
func TestPortWithoutEndpointsIsDroppedAndWouldBeRejectedByAnInterposedVIP(t *testing.T) {
	web := webService(pod1)
	web.Ports = append(web.Ports, renderer.FlatPort{Name: "dns", Port: renderer.ServicePort{Protocol: renderer.UDP, Port: 53}})
	_, txn := newRenderer(t, true, web)
	setKey := vpp_cnat.TranslationSetKey(web.ID.String())
	tr := translation(txn, "10.96.0.10", 80)
	if tr == nil || tr.GetIsRealIp() {
		t.Fatalf("the renderer's translation of 10.96.0.10:80 is %v, want an exclusive one", tr)
	}
	for k, v := range txn.Values {
		if r, ok := v.(*l3.Route); ok && r.GetDstNetwork() == "10.96.0.10/32" {
			t.Fatalf("the renderer staged %s for the cluster IP, which has a translation", k)
		}
	}
	probe := func(n *trafficNode) (tcp, udp, icmp []string) {
		tcp, _ = n.send(t, uplinkNIC, outsideMAC, st.ProtoTCP, outside+":40000", "10.96.0.10:80", podsNIC)
		udp, icmp = n.send(t, uplinkNIC, outsideMAC, st.ProtoUDP, outside+":40001", "10.96.0.10:53", podsNIC)
		return tcp, udp, icmp
	}
	wantTCP := "tcp " + outside + ":40000 -> " + pod1 + ":8080"

	n := newTrafficNode(t)
	n.commit(t, txn)
	if tcp, udp, icmp := probe(n); len(tcp) != 1 || tcp[0] != wantTCP || len(udp) != 0 || len(icmp) != 0 {
		t.Errorf("renderer's values: TCP 80 sent %q, UDP 53 sent %q with ICMP %q; want TCP 80 translated, UDP 53 dropped silently", tcp, udp, icmp)
	}

	interposed := st.NewTxn()
	for k, v := range txn.Values {
		interposed.Put(k, v)
	}
	set := proto.Clone(txn.Values[setKey]).(*vpp_cnat.TranslationSet)
	for _, t := range set.GetTranslations() {
		if vpp_cnat.TranslationIDOf(t) == vpp_cnat.TranslationIDOf(tr) {
			t.IsRealIp = true
		}
	}
	interposed.Put(setKey, set)
	rejects.Stage(interposed, "10.96.0.10", l3.Route_ICMP_PROHIBIT, []uint32{0})
	n = newTrafficNode(t)
	n.commit(t, interposed)
	tcp, udp, icmp := probe(n)
	if len(tcp) != 1 || tcp[0] != wantTCP {
		t.Errorf("interposed VIP: TCP 80 sent %q, want %q", tcp, wantTCP)
	}
	if len(udp) != 0 || len(icmp) != 1 || !strings.HasSuffix(icmp[0], outside+" 3/10") {
		t.Errorf("interposed VIP with a reject route: UDP 53 sent %q, ICMP %q, want 3/10 to the client at once", udp, icmp)
	}
}
