package statscollector

import "github.com/prometheus/client_golang/prometheus"

// Label names.
const (
	labelNamespace  = "namespace"
	labelPod        = "pod"
	labelRemoteNode = "remote_node"
	labelVPPNode    = "vpp_node"
	labelReason     = "reason"
	labelPolicy     = "policy"
	labelACL        = "acl"
	labelRule       = "rule"
	labelVerdict    = "verdict"
)

// Values of the verdict label.
const (
	verdictPermit = "permit"
	verdictDeny   = "deny"
)

// ifaceDescs are the interface metrics of one kind of interface owner (pods, VXLAN
// tunnels): the same five counters with the owner's labels.
type ifaceDescs struct {
	rxPackets, rxBytes, txPackets, txBytes, drops *prometheus.Desc
}

func newIfaceDescs(prefix, who string, labels ...string) ifaceDescs {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("contiv_dataplane_"+prefix+"_"+name, help+" "+who+".", labels, nil)
	}
	return ifaceDescs{
		rxPackets: d("rx_packets_total", "Packets VPP received on the VPP interface of the"),
		rxBytes:   d("rx_bytes_total", "Bytes VPP received on the VPP interface of the"),
		txPackets: d("tx_packets_total", "Packets VPP transmitted on the VPP interface of the"),
		txBytes:   d("tx_bytes_total", "Bytes VPP transmitted on the VPP interface of the"),
		drops:     d("drops_total", "Packets received on the VPP interface that VPP dropped, of the"),
	}
}

func (d ifaceDescs) all() []*prometheus.Desc {
	return []*prometheus.Desc{d.rxPackets, d.rxBytes, d.txPackets, d.txBytes, d.drops}
}

// descs are every metric the collector exports (docs/METRICS-DATAPLANE.md).
type descs struct {
	up, scrapeSeconds   *prometheus.Desc
	pod, vxlan          ifaceDescs
	errors              *prometheus.Desc
	natSessions, natMax *prometheus.Desc
	rulePackets         *prometheus.Desc
	ruleBytes           *prometheus.Desc
}

func newDescs() *descs {
	rule := []string{labelPolicy, labelACL, labelRule, labelVerdict}
	return &descs{
		up: prometheus.NewDesc("contiv_dataplane_stats_up",
			"1 when this scrape read VPP's stats segment, 0 when it could not (no other contiv_dataplane_ metric is exported then).", nil, nil),
		scrapeSeconds: prometheus.NewDesc("contiv_dataplane_scrape_duration_seconds",
			"Time this scrape spent reading VPP's stats segment.", nil, nil),
		pod:   newIfaceDescs("pod_interface", "pod (VPP's view: rx is what the pod sent)", labelNamespace, labelPod),
		vxlan: newIfaceDescs("vxlan", "VXLAN tunnel to the remote node", labelRemoteNode),
		errors: prometheus.NewDesc("contiv_dataplane_vpp_errors_total",
			"VPP's error counters (show errors) by graph node and reason, the drop reasons among them; only counters that are not zero.",
			[]string{labelVPPNode, labelReason}, nil),
		natSessions: prometheus.NewDesc("contiv_dataplane_nat44_sessions",
			"NAT44-ED sessions in VPP, all threads.", nil, nil),
		natMax: prometheus.NewDesc("contiv_dataplane_nat44_max_sessions",
			"NAT44-ED's configured session limit.", nil, nil),
		rulePackets: prometheus.NewDesc("contiv_dataplane_policy_rule_packets_total",
			"Packets that matched a rule of a NetworkPolicy's ACL (verdict deny: denied); only rules that matched.", rule, nil),
		ruleBytes: prometheus.NewDesc("contiv_dataplane_policy_rule_bytes_total",
			"Bytes that matched a rule of a NetworkPolicy's ACL; only rules that matched.", rule, nil),
	}
}

func (d *descs) all() []*prometheus.Desc {
	out := []*prometheus.Desc{d.up, d.scrapeSeconds, d.errors, d.natSessions, d.natMax, d.rulePackets, d.ruleBytes}
	out = append(out, d.pod.all()...)
	return append(out, d.vxlan.all()...)
}
