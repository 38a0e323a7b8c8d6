package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	podmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
)

// applyTxn applies staged values to a store (a nil value deletes).
func applyTxn(store, txn mapTxn) {
	for k, v := range txn {
		if v == nil {
			delete(store, k)
		} else {
			store[k] = v
		}
	}
}

// digest hashes a store deterministically (sorted keys, deterministic
// protobuf encoding).
func digest(t *testing.T, store mapTxn) string {
	t.Helper()
	keys := make([]string, 0, len(store))
	for k := range store {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	h := sha256.New()
	for _, k := range keys {
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(store[k])
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		fmt.Fprintf(h, "%s=%d:", k, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// TestBenchWorkloadRendersTheSameACLs runs the benchmarks' workloads: after
// every label change the values staged since the resync add up to what a
// fresh resync of the new state stages, and that is, byte for byte, what
// the renderer produced when the golden digests were recorded (any change
// of the rendered ACLs fails here and must be explained).
func TestBenchWorkloadRendersTheSameACLs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the 5,000-pod benchmark cluster")
	}
	type step struct {
		pod    *podmodel.Pod
		digest string
	}
	app := [2]*podmodel.Pod{benchPod(0, 91, 1), benchPod(0, 91, 2)}
	probe := probePods()
	cases := []struct {
		name  string
		state controller.KubeStateData
		start string
		steps []step
	}{
		{"label change, 1000 policies", benchState(1000), "94041ebe95657a77",
			[]step{{app[1], "23db8038a0b70d1f"}, {app[0], "94041ebe95657a77"}}},
		// (probe=off adds no rule: the start is the same as above)
		{"probe toggles, 10 targets", benchTargetState(1000, 10), "94041ebe95657a77",
			[]step{{probe[1], "9f8eded93226250e"}, {probe[0], "94041ebe95657a77"}}},
		{"probe toggles, 50 targets", benchTargetState(1000, 50), "94041ebe95657a77",
			[]step{{probe[1], "ddf017396ecffc4f"}, {probe[0], "94041ebe95657a77"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			key := podmodel.Key("p91", "ns-0")
			first := tc.steps[len(tc.steps)-1].pod
			tc.state[podmodel.Keyword][key] = first
			p := benchPlugin(t)
			store := mapTxn{}
			if err := p.Resync(controller.NewDBResync(), tc.state, 1, store); err != nil {
				t.Fatal(err)
			}
			if d := digest(t, store); d != tc.start {
				t.Errorf("resync: digest %s, recorded %s", d, tc.start)
			}
			prev := first
			for i, s := range tc.steps {
				txn := mapTxn{}
				ev := &controller.KubeStateChange{Resource: podmodel.Keyword, Key: key, PrevValue: prev, NewValue: s.pod}
				if _, err := p.Update(ev, txn); err != nil {
					t.Fatal(err)
				}
				applyTxn(store, txn)
				prev = s.pod
				tc.state[podmodel.Keyword][key] = s.pod
				fresh := mapTxn{}
				if err := benchPlugin(t).Resync(controller.NewDBResync(), tc.state, 1, fresh); err != nil {
					t.Fatal(err)
				}
				got, want := digest(t, store), digest(t, fresh)
				if got != want {
					t.Errorf("step %d: incremental state %s, fresh resync %s", i, got, want)
				}
				if want != s.digest {
					t.Errorf("step %d: digest %s, recorded %s", i, want, s.digest)
				}
			}
		})
	}
}
