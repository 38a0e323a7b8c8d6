//go:build !natpermapping

package natplugin

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/pkg/vppsim"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

// (The per-mapping build, natpermapping, does not resolve these conflicts.)

// serviceBackends are where the Service default/web of nodeConfig sends 10.96.0.10:80.
const serviceBackends = "10.1.1.2:8080 10.1.1.3:8080"

// backendsOf traces a TCP packet to dst through VPP's NAT tables.
func backendsOf(sim *vppsim.Sim, dst string) string {
	dsts, _ := destinations(sim, "10.1.1.2:40000", dst)
	return strings.Join(dsts, " ")
}

// waitStatus waits for the value of key to reach state, and returns its status.
func (a *agent) waitStatus(t *testing.T, key string, state kvapi.ValueState) *kvapi.ValueStatus {
	t.Helper()
	var st *kvapi.ValueStatus
	testkit.Eventually(t, testkit.DefaultTimeout, key+" "+state.String(), func() error {
		if st = a.s.GetValueStatus(key); st.State != state {
			return fmt.Errorf("%s: %s %v %v", key, st.State, st.Error, st.Details)
		}
		return nil
	})
	return st
}

// waitRefused waits for the external value of key to be kept out of VPP because the
// agent's value of label maps its endpoint: PENDING on DNAT44FreeKey, or FAILED
// (when the scheduler tried it before it learnt of the conflict) with the refusal,
// which names both keys.
func (a *agent) waitRefused(t *testing.T, key, label string) {
	t.Helper()
	ext, _ := nat.ParseDNAT44Key(key)
	testkit.Eventually(t, testkit.DefaultTimeout, key+" refused", func() error {
		st := a.s.GetValueStatus(key)
		switch {
		case st.State == kvapi.StatePending && strings.Contains(strings.Join(st.Details, " "), DNAT44FreeKey(ext)):
			return nil
		case st.State == kvapi.StateFailed && strings.Contains(st.Error, nat.DNAT44Key(label)) &&
			strings.Contains(st.Error, key) && strings.Contains(st.Error, "10.96.0.10:80"):
			return nil
		}
		return fmt.Errorf("%s: %s %v %v, want PENDING on %s or FAILED naming %s", key, st.State, st.Error, st.Details,
			DNAT44FreeKey(ext), nat.DNAT44Key(label))
	})
}

// TestServiceWinsAnExternalDNATOnItsEndpointWhateverTheOrder: an operator's DNat44
// under another key maps the Service's 10.96.0.10:80. Whatever the labels' order (the
// scheduler's order of creation in a resync) and after VPP and agent restarts, the
// Service keeps its endpoint: the external value waits, its status naming why, and
// gets the endpoint when the Service lets it go.
func TestServiceWinsAnExternalDNATOnItsEndpointWhateverTheOrder(t *testing.T) {
	for _, extLabel := range []string{"aaa-operator", "zzz-operator"} {
		t.Run(extLabel, func(t *testing.T) {
			vpp := newRestartableVPP(t)
			ctx := context.Background()
			full := kvapi.WithResync(ctx, kvapi.FullResync, false)
			svcKey, extKey := nat.DNAT44Key("default/web"), nat.DNAT44Key(extLabel)
			cfg := nodeConfig()
			cfg[extKey] = externalDNAT(extLabel)

			check := func(t *testing.T, a *agent, when string) {
				t.Helper()
				a.waitStatus(t, svcKey, kvapi.StateConfigured)
				a.waitRefused(t, extKey, "default/web")
				if got := backendsOf(vpp.sim, "10.96.0.10:80"); got != serviceBackends {
					t.Errorf("%s: 10.96.0.10:80 goes to %q, want the Service's backends %q", when, got, serviceBackends)
				}
			}

			a := newAgent(t, vpp.conn)
			if err := a.commit(full, cfg); err != nil {
				t.Logf("first commit: %v", err)
			}
			check(t, a, "first resync")

			vpp.restart(t)
			if err := a.commit(full, cfg); err != nil {
				t.Logf("resync after the VPP restart: %v", err)
			}
			check(t, a, "after a VPP restart")

			restarted := newAgent(t, vpp.conn) // the agent restarts; VPP keeps its state
			if err := restarted.commit(full, cfg); err != nil {
				t.Logf("resync after the agent restart: %v", err)
			}
			check(t, restarted, "after an agent restart")

			// the Service goes away: the external value gets its endpoints
			if err := restarted.commit(ctx, map[string]proto.Message{svcKey: nil}); err != nil {
				t.Fatal(err)
			}
			restarted.waitStatus(t, extKey, kvapi.StateConfigured)
			if got := backendsOf(vpp.sim, "10.96.0.10:80"); got != "10.1.1.9:9090" {
				t.Errorf("after the Service is deleted, 10.96.0.10:80 goes to %q, want the external value's 10.1.1.9:9090", got)
			}
		})
	}
}

// TestServiceTakesItsEndpointOverFromAnAppliedExternalDNAT: the external value came
// first (no Service yet); the Service created later gets its endpoint at once, and the
// external value waits (its mapping on another address goes with it).
func TestServiceTakesItsEndpointOverFromAnAppliedExternalDNAT(t *testing.T) {
	vpp := newRestartableVPP(t)
	a := newAgent(t, vpp.conn)
	ctx := context.Background()
	svcKey, extKey := nat.DNAT44Key("default/web"), nat.DNAT44Key("operator")
	cfg := nodeConfig()
	svc := cfg[svcKey]
	delete(cfg, svcKey)
	cfg[extKey] = externalDNAT("operator")
	if err := a.commit(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	a.waitStatus(t, extKey, kvapi.StateConfigured)
	if got := backendsOf(vpp.sim, "10.96.0.10:80"); got != "10.1.1.9:9090" {
		t.Fatalf("without the Service, 10.96.0.10:80 goes to %q, want the external value's", got)
	}

	if err := a.commit(ctx, map[string]proto.Message{svcKey: svc}); err != nil {
		t.Fatalf("the Service created over an external value's endpoint: %v", err)
	}
	if st := a.s.GetValueStatus(svcKey); st.State != kvapi.StateConfigured {
		t.Errorf("Service: %s %v, want CONFIGURED at once", st.State, st.Error)
	}
	if got := backendsOf(vpp.sim, "10.96.0.10:80"); got != serviceBackends {
		t.Errorf("10.96.0.10:80 goes to %q, want the Service's backends %q", got, serviceBackends)
	}
	a.waitRefused(t, extKey, "default/web")
	if got := backendsOf(vpp.sim, "10.96.0.99:80"); got != "" {
		t.Errorf("the waiting external value still maps 10.96.0.99:80 to %q", got)
	}
}
