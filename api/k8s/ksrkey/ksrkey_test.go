package ksrkey

import "testing"

func TestPrefixesFollowUpstreamLayout(t *testing.T) {
	if KsrPrefix != "/vnf-agent/contiv-ksr/" {
		t.Errorf("KsrPrefix = %q", KsrPrefix)
	}
	if got := AgentPrefix("k8s-master"); got != "/vnf-agent/k8s-master/" {
		t.Errorf("AgentPrefix = %q", got)
	}
}
