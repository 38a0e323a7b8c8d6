package cnatplugin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	govppapi "go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/cnat"
	"go.fd.io/govpp/binapi/feature"
	"go.fd.io/govpp/binapi/interface_types"
	"google.golang.org/protobuf/proto"

	cnatmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/cnat"
	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/internal/vppbase"
)

var (
	// vipKey is the key of vipSet, the set "default/web" of one translation, vip.
	vipKey = cnatmodel.TranslationSetKey("default/web")
	// vip is a ClusterIP with a backend by address and one by interface (loop0).
	vip = &cnatmodel.Translation{VipAddress: "10.96.0.10", VipPort: 80, AllocPort: true, Paths: []*cnatmodel.Path{
		{Dst: ep("10.1.1.2", 8080)},
		{Dst: &cnatmodel.Endpoint{Interface: "loop0", Port: 8080}, Src: ep("10.1.1.254", 0)},
	}}
	vipSet = inSet(vip)
	// dns is a UDP translation of the same address.
	dns = &cnatmodel.Translation{VipAddress: "10.96.0.10", VipPort: 53, Protocol: cnatmodel.Protocol_UDP, Paths: []*cnatmodel.Path{{Dst: ep("10.1.1.5", 53)}}}
)

// setOf returns the key and the set of a label and its translations.
func setOf(label string, ts ...*cnatmodel.Translation) (string, *cnatmodel.TranslationSet) {
	return cnatmodel.TranslationSetKey(label), &cnatmodel.TranslationSet{Label: label, Translations: ts}
}

// setMetadata returns the metadata the scheduler holds for a set.
func (a *agent) setMetadata(t *testing.T, key string) *TranslationSetMetadata {
	t.Helper()
	md, ok := a.kvs.GetMetadataMap(TranslationSetDescriptorName).GetValue(key)
	if !ok {
		t.Fatalf("no metadata for %s", key)
	}
	return md.(*TranslationSetMetadata)
}

func TestTranslationsOfASetAreCreatedUpdatedInPlaceAndDeleted(t *testing.T) {
	e := newEnv(t)
	loopKey, loop := loopback("loop0", "10.1.1.1/24")
	e.mustCommit(map[string]proto.Message{loopKey: loop, vipKey: vipSet})
	if st := e.state(vipKey); st != kvapi.StateConfigured {
		t.Fatalf("set %v", st)
	}
	sw, _ := e.sim.InterfaceByTag("loop0")
	got := e.vppTranslations()
	want := fmt.Sprintf("0 10.96.0.10:80/TCP lb=0 paths=[0.0.0.0:0->10.1.1.2:8080 10.1.1.254:0->if%d(10.1.1.1):8080]", sw.SwIfIndex)
	if len(got) != 1 || got[0] != want {
		t.Fatalf("VPP's translations %q, want %q", got, want)
	}

	// A new backend set: the same translation, changed in place.
	e.sim.ResetMessageCounts()
	updated := &cnatmodel.Translation{VipAddress: "10.96.0.10", VipPort: 80, Paths: []*cnatmodel.Path{{Dst: ep("10.1.1.3", 8080)}}}
	e.mustCommit(map[string]proto.Message{vipKey: inSet(updated)})
	if got := e.vppTranslations(); len(got) != 1 || got[0] != "0 10.96.0.10:80/TCP lb=0 paths=[0.0.0.0:0->10.1.1.3:8080]" {
		t.Fatalf("VPP's translations after the update %q", got)
	}
	if n := e.sim.MessageCount("cnat_translation_del"); n != 0 {
		t.Errorf("the update deleted the translation (%d cnat_translation_del)", n)
	}
	// Maglev: VPP keeps the load balancing a translation was created with, so the
	// translation is made again.
	maglev := proto.Clone(updated).(*cnatmodel.Translation)
	maglev.LbType = cnatmodel.Translation_MAGLEV
	e.mustCommit(map[string]proto.Message{vipKey: inSet(maglev)})
	if got := e.vppTranslations(); len(got) != 1 || dropID(got[0]) != "10.96.0.10:80/TCP lb=1 paths=[0.0.0.0:0->10.1.1.3:8080]" {
		t.Fatalf("VPP's translations after the change to Maglev %q", got)
	}
	if n := e.sim.MessageCount("cnat_translation_del"); n != 1 {
		t.Errorf("the change to Maglev sent %d cnat_translation_del, want 1", n)
	}

	// A second set gets its own id; deleting the first frees it by id.
	dnsKey, dnsSet := setOf("kube-system/dns", dns)
	e.mustCommit(map[string]proto.Message{dnsKey: dnsSet})
	e.mustCommit(map[string]proto.Message{vipKey: nil})
	if got := e.vppTranslations(); len(got) != 1 || !strings.HasPrefix(got[0], "1 10.96.0.10:53/UDP") {
		t.Fatalf("VPP's translations after deleting the first %q", got)
	}
	if id, ok := e.setMetadata(t, dnsKey).ID("10.96.0.10", 53, cnatmodel.Protocol_UDP); !ok || id != 1 {
		t.Errorf("id of the DNS translation in the metadata = %d, %v; want 1", id, ok)
	}
	if _, ok := e.kvs.GetMetadataMap(TranslationSetDescriptorName).GetValue(vipKey); ok {
		t.Errorf("metadata of the deleted set %s is left", vipKey)
	}
}

// TestASetUpdateSendsOnlyWhatChanged: of a set of four translations, changing the
// paths of one sends one cnat_translation_update, removing one one
// cnat_translation_del, adding one one cnat_translation_update; the others keep
// their ids.
func TestASetUpdateSendsOnlyWhatChanged(t *testing.T) {
	e := newEnv(t)
	ts := []*cnatmodel.Translation{
		backend("10.96.0.10", 80, "10.1.1.2"), backend("10.96.0.10", 443, "10.1.1.2"),
		backend("192.168.16.1", 30080, "10.1.1.2"), backend("192.168.16.2", 30080, "10.1.1.2"),
	}
	key, set := setOf("default/web", ts...)
	e.mustCommit(map[string]proto.Message{key: set})
	idsBefore := e.vppTranslations()
	for _, step := range []struct {
		what        string
		ts          []*cnatmodel.Translation
		updates     int64
		dels        int64
		translation string // the translation expected to change, "" for none
	}{
		{"new paths of one", []*cnatmodel.Translation{ts[0], backend("10.96.0.10", 443, "10.1.1.9"), ts[2], ts[3]}, 1, 0, "10.96.0.10:443/TCP"},
		{"one gone", []*cnatmodel.Translation{ts[0], backend("10.96.0.10", 443, "10.1.1.9"), ts[2]}, 0, 1, "192.168.16.2:30080/TCP"},
		{"one more", []*cnatmodel.Translation{ts[0], backend("10.96.0.10", 443, "10.1.1.9"), ts[2], backend("192.168.16.3", 30080, "10.1.1.2")}, 1, 0, "192.168.16.3:30080/TCP"},
		{"the same in another order", []*cnatmodel.Translation{ts[2], ts[0], backend("192.168.16.3", 30080, "10.1.1.2"), backend("10.96.0.10", 443, "10.1.1.9")}, 0, 0, ""},
	} {
		e.sim.ResetMessageCounts()
		_, next := setOf("default/web", step.ts...)
		e.mustCommit(map[string]proto.Message{key: next})
		if u, d := e.sim.MessageCount("cnat_translation_update"), e.sim.MessageCount("cnat_translation_del"); u != step.updates || d != step.dels {
			t.Errorf("%s: %d updates and %d deletions, want %d and %d", step.what, u, d, step.updates, step.dels)
		}
		got := e.vppTranslations()
		if len(got) != len(step.ts) {
			t.Fatalf("%s: VPP has %q", step.what, got)
		}
		md := e.setMetadata(t, key)
		for _, tr := range step.ts {
			id, ok := md.ID(tr.GetVipAddress(), tr.GetVipPort(), tr.GetProtocol())
			line := fmt.Sprintf("%d %s", id, cnatmodel.FormatTranslation(tr))
			if !ok || !slices.ContainsFunc(got, func(g string) bool { return strings.HasPrefix(g, line+" ") }) {
				t.Errorf("%s: metadata id of %s is %d (%v), VPP has %q", step.what, cnatmodel.FormatTranslation(tr), id, ok, got)
			}
		}
	}
	// The translations never touched kept the ids they were created with.
	if after := e.vppTranslations(); !slices.Contains(after, idsBefore[0]) || !slices.Contains(after, idsBefore[2]) {
		t.Errorf("ids before %q, after %q: untouched translations were made again", idsBefore, after)
	}
}

func TestASetWaitsForTheInterfaceOfAnEndpoint(t *testing.T) {
	e := newEnv(t)
	e.mustCommit(map[string]proto.Message{vipKey: vipSet})
	if st := e.state(vipKey); st != kvapi.StatePending {
		t.Fatalf("set before its interface: %v", st)
	}
	if got := e.vppTranslations(); len(got) != 0 {
		t.Fatalf("VPP has %q before the interface", got)
	}
	loopKey, loop := loopback("loop0", "10.1.1.1/24")
	e.mustCommit(map[string]proto.Message{loopKey: loop})
	if st := e.state(vipKey); st != kvapi.StateConfigured || len(e.vppTranslations()) != 1 {
		t.Fatalf("set after its interface: %v, VPP %q", st, e.vppTranslations())
	}
	// Removing the interface takes the set out first.
	e.mustCommit(map[string]proto.Message{loopKey: nil})
	if st := e.state(vipKey); st != kvapi.StatePending || len(e.vppTranslations()) != 0 {
		t.Fatalf("set after its interface went: %v, VPP %q", st, e.vppTranslations())
	}
}

// snatConfig is a node's SNAT configuration: addresses, policy, one excluded
// prefix, one policy interface and the feature on it.
func snatConfig() map[string]proto.Message {
	loopKey, loop := loopback("loop0", "10.1.1.1/24")
	return map[string]proto.Message{
		loopKey:                    loop,
		cnatmodel.SnatAddressesKey: &cnatmodel.SnatAddresses{Ip4: "192.168.16.1"},
		cnatmodel.SnatPolicyKey:    &cnatmodel.SnatPolicy{Policy: cnatmodel.SnatPolicy_K8S},
		cnatmodel.SnatExcludePrefixKey("10.1.0.0/16"):                                               &cnatmodel.SnatExcludePrefix{Prefix: "10.1.0.0/16"},
		cnatmodel.SnatPolicyInterfaceKey("loop0", cnatmodel.SnatPolicyInterface_POD):                &cnatmodel.SnatPolicyInterface{Interface: "loop0", Table: cnatmodel.SnatPolicyInterface_POD},
		cnatmodel.SnatFeatureKey("loop0", cnatmodel.SnatFeature_SNAT, cnatmodel.AddressFamily_IPV4): &cnatmodel.SnatFeature{Interface: "loop0"},
	}
}

func TestSnatFeatureFollowsTheAddressOfItsFamily(t *testing.T) {
	e := newEnv(t)
	cfg := snatConfig()
	f6Key := cnatmodel.SnatFeatureKey("loop0", cnatmodel.SnatFeature_SNAT, cnatmodel.AddressFamily_IPV6)
	cfg[f6Key] = &cnatmodel.SnatFeature{Interface: "loop0", Family: cnatmodel.AddressFamily_IPV6}
	e.mustCommit(cfg)
	for k := range cfg {
		want := kvapi.StateConfigured
		if k == f6Key {
			want = kvapi.StatePending // no IPv6 SNAT address: VPP would rewrite to ::
		}
		if st := e.state(k); st != want {
			t.Errorf("%s: %v, want %v", k, st, want)
		}
	}
	if got := e.snatAddresses(); got != "ip4=192.168.16.1 ip6=:: sw_if_index=-1" {
		t.Errorf("VPP's SNAT addresses %s", got)
	}
	if !e.featureOn("loop0", "ip4-unicast", "cnat-snat-ip4") || e.featureOn("loop0", "ip6-unicast", "cnat-snat-ip6") {
		t.Error("cnat-snat-ip4 should be on loop0, cnat-snat-ip6 not")
	}
	e.mustCommit(map[string]proto.Message{cnatmodel.SnatAddressesKey: &cnatmodel.SnatAddresses{Ip4: "192.168.16.1", Ip6: "fd00::1"}})
	if st := e.state(f6Key); st != kvapi.StateConfigured || !e.featureOn("loop0", "ip6-unicast", "cnat-snat-ip6") {
		t.Errorf("cnat-snat-ip6 once an IPv6 address is set: %v", st)
	}
	// Without addresses, no feature stays on (VPP would rewrite to zero addresses).
	e.mustCommit(map[string]proto.Message{cnatmodel.SnatAddressesKey: nil})
	if e.featureOn("loop0", "ip4-unicast", "cnat-snat-ip4") || e.featureOn("loop0", "ip6-unicast", "cnat-snat-ip6") {
		t.Error("a cnat-snat feature stayed on without SNAT addresses")
	}
	if got := e.snatAddresses(); got != "ip4=0.0.0.0 ip6=:: sw_if_index=-1" {
		t.Errorf("VPP's SNAT addresses after delete %s", got)
	}
}

func TestResyncFindsVPPsStateAndRepairsDrift(t *testing.T) {
	e := newEnv(t)
	loopKey, loop := loopback("loop0", "10.1.1.1/24")
	desired := snatConfig()
	desired[loopKey] = loop
	desired[vipKey] = inSet(vip, dns)
	e.mustCommit(desired)
	want := e.vppTranslations()

	// Drift behind the agent's back: one translation of its set and a feature gone,
	// a stray translation and other SNAT addresses.
	e.vpp(&cnat.CnatTranslationDel{ID: 0}, &cnat.CnatTranslationDelReply{})
	stray, err := translationToAPI(&cnatmodel.Translation{VipAddress: "10.96.0.99", VipPort: 53, Protocol: cnatmodel.Protocol_UDP,
		Paths: []*cnatmodel.Path{{Dst: ep("10.1.1.9", 53)}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	e.vpp(&cnat.CnatTranslationUpdate{Translation: stray}, &cnat.CnatTranslationUpdateReply{})
	e.vpp(&cnat.CnatSetSnatAddresses{SnatIP4: [4]byte{10, 0, 0, 9}, SwIfIndex: ^interface_types.InterfaceIndex(0)}, &cnat.CnatSetSnatAddressesReply{})
	loop0, _ := e.sim.InterfaceByTag("loop0")
	e.vpp(&feature.FeatureEnableDisable{SwIfIndex: interface_types.InterfaceIndex(loop0.SwIfIndex), ArcName: "ip4-unicast", FeatureName: "cnat-snat-ip4"},
		&feature.FeatureEnableDisableReply{})
	e.vpp(&feature.FeatureEnableDisable{SwIfIndex: interface_types.InterfaceIndex(loop0.SwIfIndex), Enable: true, ArcName: "ip6-unicast", FeatureName: "cnat-snat-ip6"},
		&feature.FeatureEnableDisableReply{})

	// A restarted agent resyncs against what it finds.
	a := e.newAgent()
	if err := a.commit(kvapi.WithResync(context.Background(), kvapi.FullResync, true), desired); err != nil {
		t.Fatalf("resync: %v", err)
	}
	got := e.vppTranslations()
	if len(got) != 2 || !slices.Contains(got, want[1]) || strings.Contains(strings.Join(got, " "), "10.96.0.99") ||
		!slices.ContainsFunc(got, func(g string) bool { return dropID(g) == dropID(want[0]) }) {
		t.Errorf("VPP's translations after resync %q, want %q (the DNS one untouched)", got, want)
	}
	if got := e.snatAddresses(); got != "ip4=192.168.16.1 ip6=:: sw_if_index=-1" {
		t.Errorf("VPP's SNAT addresses after resync %s", got)
	}
	if !e.featureOn("loop0", "ip4-unicast", "cnat-snat-ip4") {
		t.Error("cnat-snat-ip4 not re-enabled by the resync")
	}
	if e.featureOn("loop0", "ip6-unicast", "cnat-snat-ip6") {
		t.Error("cnat-snat-ip6, which NB does not want, is still on after the resync")
	}
	for k := range desired {
		if st := a.state(k); st != kvapi.StateConfigured {
			t.Errorf("%s after resync: %v", k, st)
		}
	}
	// A resync with nothing changed sends no change to VPP.
	e.sim.ResetMessageCounts()
	if err := a.commit(kvapi.WithResync(context.Background(), kvapi.FullResync, true), desired); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"cnat_translation_update", "cnat_translation_del", "cnat_set_snat_addresses", "feature_enable_disable",
		"cnat_set_snat_policy", "cnat_snat_policy_add_del_exclude_pfx", "cnat_snat_policy_add_del_if"} {
		if n := e.sim.MessageCount(m); n != 0 {
			t.Errorf("a resync without drift sent %d %s", n, m)
		}
	}
}

func TestFailedCreateIsRetriedByTheOneRule(t *testing.T) {
	e := newEnv(t)
	loopKey, loop := loopback("loop0", "10.1.1.1/24")
	e.mustCommit(map[string]proto.Message{loopKey: loop})
	if err := e.sim.FailMessage("cnat_translation_update", int32(govppapi.UNSPECIFIED), 1); err != nil {
		t.Fatal(err)
	}
	err := e.commit(kvapi.WithRetry(context.Background(), time.Second, 3, false), map[string]proto.Message{vipKey: inSet(vip, dns)})
	if !errors.Is(err, govppapi.UNSPECIFIED) || !strings.Contains(err.Error(), "create cnat translation set default/web: update translation 10.96.0.10:80/TCP") {
		t.Fatalf("commit = %v, want VPP's failure naming the set and the translation", err)
	}
	// The translation created beside the failed one was deleted: a set not applied
	// leaves nothing in VPP.
	if got := e.vppTranslations(); len(got) != 0 {
		t.Fatalf("VPP's translations after the failed creation %q", got)
	}
	e.clock.AwaitWaiting(t)
	e.clock.Step(time.Second)
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "the retried translation in VPP", func() bool {
		return e.state(vipKey) == kvapi.StateConfigured
	})
	if got := e.vppTranslations(); len(got) != 2 {
		t.Fatalf("VPP's translations after the retry %q", got)
	}

	// A permanent refusal (INVALID_VALUE: VPP refuses the request for what it says)
	// is not retried.
	if err := e.sim.FailMessage("cnat_translation_update", int32(govppapi.INVALID_VALUE), 1); err != nil {
		t.Fatal(err)
	}
	dnsKey, dnsSet := setOf("kube-system/dns", backend("10.96.0.11", 53, "10.1.1.5"))
	err = e.commit(kvapi.WithRetry(context.Background(), time.Second, 3, false), map[string]proto.Message{dnsKey: dnsSet})
	if !errors.Is(err, govppapi.INVALID_VALUE) {
		t.Fatalf("commit = %v", err)
	}
	if st := e.state(dnsKey); st != kvapi.StateFailed {
		t.Errorf("a permanent failure left %v, want FAILED", st)
	}
}

func TestResyncAfterVPPRestartSetsEverythingAgain(t *testing.T) {
	e := newEnv(t)
	desired := snatConfig()
	desired[vipKey] = vipSet
	e.mustCommit(desired)
	want := e.vppTranslations()

	e.sim.Restart()
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "govppmux reconnected", func() bool { return e.mux.VPPInfo().Reconnects == 1 && e.mux.IsConnected() })
	if got := e.vppTranslations(); len(got) != 0 {
		t.Fatalf("restarted VPP kept %q", got)
	}
	e.sim.ResetMessageCounts()
	if err := e.commit(kvapi.WithResync(context.Background(), kvapi.FullResync, true), desired); err != nil {
		t.Fatalf("resync: %v", err)
	}
	if got := e.vppTranslations(); len(got) != 1 || dropID(got[0]) != dropID(want[0]) {
		t.Errorf("VPP's translations after the resync %q, want %q", got, want)
	}
	if got := e.snatAddresses(); got != "ip4=192.168.16.1 ip6=:: sw_if_index=-1" {
		t.Errorf("VPP's SNAT addresses after the resync %s", got)
	}
	if !e.featureOn("loop0", "ip4-unicast", "cnat-snat-ip4") {
		t.Error("cnat-snat-ip4 not enabled again")
	}
	// VPP cannot read back the policy, the excluded prefixes or the policy
	// interfaces: the resync must have sent them again.
	for _, m := range []string{"cnat_set_snat_policy", "cnat_snat_policy_add_del_exclude_pfx", "cnat_snat_policy_add_del_if"} {
		if n := e.sim.MessageCount(m); n != 1 {
			t.Errorf("the resync after the restart sent %d %s, want 1", n, m)
		}
	}
}

func TestABurstOfTranslationsGetsEachItsOwnID(t *testing.T) {
	e := newEnv(t)
	const n = 600 // above the pipeline's window (256)
	burst := map[string]proto.Message{}
	for i := range n / 10 {
		var ts []*cnatmodel.Translation
		for j := range 10 {
			k := i*10 + j
			ts = append(ts, backend(fmt.Sprintf("10.96.%d.%d", k/250, k%250+1), 80, fmt.Sprintf("10.1.%d.%d", k/250, k%250+1)))
		}
		key, set := setOf(fmt.Sprintf("default/svc-%d", i), ts...)
		burst[key] = set
	}
	e.mustCommit(burst)
	got := e.vppTranslations()
	if len(got) != n {
		t.Fatalf("VPP has %d translations, want %d", len(got), n)
	}
	idOf := map[string]string{}
	for _, line := range got {
		id, rest, _ := strings.Cut(line, " ")
		tr, _, _ := strings.Cut(rest, " ")
		idOf[tr] = id
	}
	for key, v := range burst {
		md := e.setMetadata(t, key)
		for _, tr := range v.(*cnatmodel.TranslationSet).GetTranslations() {
			id, ok := md.ID(tr.GetVipAddress(), 80, cnatmodel.Protocol_TCP)
			if !ok || fmt.Sprint(id) != idOf[cnatmodel.FormatTranslation(tr)] {
				t.Fatalf("%s: metadata id %d (%v) of %s, VPP's id %s", key, id, ok, cnatmodel.FormatTranslation(tr), idOf[cnatmodel.FormatTranslation(tr)])
			}
		}
	}
}

func TestAnInvalidValueIsRefusedBeforeVPPSeesIt(t *testing.T) {
	e := newEnv(t)
	e.sim.ResetMessageCounts()
	bad := &cnatmodel.Translation{VipAddress: "10.96.0.10", VipPort: 80, Paths: []*cnatmodel.Path{{Dst: ep("fd00::2", 80)}}}
	err := e.commit(context.Background(), map[string]proto.Message{vipKey: inSet(dns, bad)})
	var ive *kvapi.InvalidValueError
	if !errors.As(err, &ive) || !strings.Contains(err.Error(), "translations[1].paths[0].dst.address fd00::2 is not of the VIP's family IPV4") {
		t.Fatalf("commit = %v, want the invalid field named", err)
	}
	if st := e.state(vipKey); st != kvapi.StateInvalid {
		t.Errorf("state %v, want INVALID", st)
	}
	if n := e.sim.MessageCount("cnat_translation_update"); n != 0 {
		t.Errorf("VPP got %d cnat_translation_update for an invalid value", n)
	}
}

func TestDeleteWithoutMetadataFindsTheIDsInVPP(t *testing.T) {
	e := newEnv(t)
	d := NewTranslationSetDescriptor(vppbase.DescriptorDeps{Log: quietLog(), Ch: e.raw})
	firstKey, first := setOf("default/first", backend("10.96.0.11", 80, "10.1.1.2"))
	if _, err := d.Create(firstKey, first); err != nil {
		t.Fatal(err)
	}
	secondKey, second := setOf("default/second", backend("10.96.0.10", 80, "10.1.1.3"), backend("10.96.0.10", 443, "10.1.1.3"))
	md, err := d.Create(secondKey, second)
	if err != nil || md.(*TranslationSetMetadata).Len() != 2 {
		t.Fatalf("Create = %v, %v; want two ids", md, err)
	}
	if err := d.Delete(secondKey, second, nil); err != nil {
		t.Fatal(err)
	}
	if got := e.vppTranslations(); len(got) != 1 || !strings.HasPrefix(got[0], "0 10.96.0.11:80/TCP") {
		t.Fatalf("VPP's translations %q, want only 10.96.0.11:80", got)
	}
	err = d.Delete(secondKey, second, md)
	if !errors.Is(err, govppapi.NO_SUCH_ENTRY) || !strings.Contains(err.Error(), "delete cnat translation set default/second: 2 of its requests failed, the first: delete translation 10.96.0.10:80/TCP (id 1)") {
		t.Errorf("deleting it again = %v, want VPP's NO_SUCH_ENTRY naming the set and the translation", err)
	}
}

// TestAFailedUpdateIsRetriedUntilVPPHoldsTheSet: VPP refuses one request of a set's
// update part-way; the error names the set and the translation, the retry sends what
// is needed and VPP ends with exactly the wanted translations, their ids in the
// metadata.
func TestAFailedUpdateIsRetriedUntilVPPHoldsTheSet(t *testing.T) {
	e := newEnv(t)
	key, set := setOf("default/web", backend("10.96.0.10", 80, "10.1.1.2"), backend("10.96.0.10", 443, "10.1.1.2"), backend("10.96.0.10", 8443, "10.1.1.2"))
	e.mustCommit(map[string]proto.Message{key: set})
	_, next := setOf("default/web", backend("10.96.0.10", 80, "10.1.1.7"), backend("10.96.0.10", 443, "10.1.1.7"), backend("10.96.0.10", 9090, "10.1.1.7"))
	if err := e.sim.FailMessage("cnat_translation_update", int32(govppapi.UNSPECIFIED), 1); err != nil {
		t.Fatal(err)
	}
	err := e.commit(kvapi.WithRetry(context.Background(), time.Second, 3, false), map[string]proto.Message{key: next})
	if !errors.Is(err, govppapi.UNSPECIFIED) || !strings.Contains(err.Error(), "update cnat translation set default/web: update translation 10.96.0.10:80/TCP") {
		t.Fatalf("commit = %v, want VPP's failure naming the set and the translation", err)
	}
	e.clock.AwaitWaiting(t)
	e.clock.Step(time.Second)
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "the retried update", func() bool { return e.state(key) == kvapi.StateConfigured })
	got := e.vppTranslations()
	wantVPP := []string{"10.96.0.10:80/TCP lb=0 paths=[0.0.0.0:0->10.1.1.7:8080]", "10.96.0.10:443/TCP lb=0 paths=[0.0.0.0:0->10.1.1.7:8080]",
		"10.96.0.10:9090/TCP lb=0 paths=[0.0.0.0:0->10.1.1.7:8080]"}
	if len(got) != 3 {
		t.Fatalf("VPP's translations after the retry %q, want %q", got, wantVPP)
	}
	for _, w := range wantVPP {
		if !slices.ContainsFunc(got, func(g string) bool { return dropID(g) == w }) {
			t.Errorf("VPP's translations after the retry %q lack %q", got, w)
		}
	}
	md := e.setMetadata(t, key)
	for _, tr := range next.GetTranslations() {
		id, ok := md.ID("10.96.0.10", tr.GetVipPort(), cnatmodel.Protocol_TCP)
		if !ok || !slices.Contains(got, fmt.Sprintf("%d %s", id, wantVPP[slices.IndexFunc(wantVPP, func(w string) bool {
			return strings.HasPrefix(w, cnatmodel.FormatTranslation(tr)+" ")
		})])) {
			t.Errorf("metadata id of %s = %d (%v), VPP has %q", cnatmodel.FormatTranslation(tr), id, ok, got)
		}
	}
	if md.Len() != 3 {
		t.Errorf("the metadata holds %d ids, want 3", md.Len())
	}
}

func TestIPv6TranslationAndInterfaceSNATAddressesSurviveAResyncUnchanged(t *testing.T) {
	e := newEnv(t)
	loopKey, loop := loopback("loop0", "10.1.1.1/24", "fd00:1::1/64")
	v6Key, v6Set := setOf("kube-system/dns", &cnatmodel.Translation{VipAddress: "FD00::A", VipPort: 53, Protocol: cnatmodel.Protocol_UDP, Paths: []*cnatmodel.Path{
		{Dst: ep("fd00:1::2", 5353)},
		{Dst: &cnatmodel.Endpoint{Interface: "loop0", InterfaceFamily: cnatmodel.AddressFamily_IPV6, Port: 5353}},
	}})
	desired := map[string]proto.Message{
		loopKey:                    loop,
		v6Key:                      v6Set,
		cnatmodel.SnatAddressesKey: &cnatmodel.SnatAddresses{Interface: "loop0"},
		cnatmodel.SnatFeatureKey("loop0", cnatmodel.SnatFeature_SNAT, cnatmodel.AddressFamily_IPV6): &cnatmodel.SnatFeature{Interface: "loop0", Family: cnatmodel.AddressFamily_IPV6},
	}
	e.mustCommit(desired)
	sw, _ := e.sim.InterfaceByTag("loop0")
	want := fmt.Sprintf("0 [fd00::a]:53/UDP lb=0 paths=[[::]:0->[fd00:1::2]:5353 [::]:0->if%d(fd00:1::1):5353]", sw.SwIfIndex)
	if got := e.vppTranslations(); len(got) != 1 || got[0] != want {
		t.Fatalf("VPP's translations %q, want %q", got, want)
	}
	if got := e.snatAddresses(); got != fmt.Sprintf("ip4=10.1.1.1 ip6=fd00:1::1 sw_if_index=%d", sw.SwIfIndex) {
		t.Errorf("VPP's SNAT addresses %s, want those of loop0", got)
	}
	if !e.featureOn("loop0", "ip6-unicast", "cnat-snat-ip6") {
		t.Error("cnat-snat-ip6 is off")
	}
	e.sim.ResetMessageCounts()
	a := e.newAgent()
	if err := a.commit(kvapi.WithResync(context.Background(), kvapi.FullResync, true), desired); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"cnat_translation_update", "cnat_translation_del", "cnat_set_snat_addresses", "feature_enable_disable"} {
		if n := e.sim.MessageCount(m); n != 0 {
			t.Errorf("a restarted agent's resync of an unchanged VPP sent %d %s", n, m)
		}
	}
}

// TestInputAndOutputFeaturesAreEnabledOnTheirArcsAndReadBack: cnat-input goes on
// ip4/ip6-unicast and cnat-output on ip4/ip6-output (cnat_node_feature.c), neither
// waits for a SNAT address, and a restarted agent finds them with
// feature_is_enabled: one turned off behind its back is turned on again, one it does
// not want is turned off, and a resync without drift changes nothing.
func TestInputAndOutputFeaturesAreEnabledOnTheirArcsAndReadBack(t *testing.T) {
	e := newEnv(t)
	loopKey, loop := loopback("loop0", "10.1.1.1/24", "fd00:1::1/64")
	feat := func(node cnatmodel.SnatFeature_Node, fam cnatmodel.AddressFamily) (string, *cnatmodel.SnatFeature) {
		return cnatmodel.SnatFeatureKey("loop0", node, fam), &cnatmodel.SnatFeature{Interface: "loop0", Node: node, Family: fam}
	}
	desired := map[string]proto.Message{loopKey: loop}
	for _, n := range []cnatmodel.SnatFeature_Node{cnatmodel.SnatFeature_INPUT, cnatmodel.SnatFeature_OUTPUT} {
		for _, f := range []cnatmodel.AddressFamily{cnatmodel.AddressFamily_IPV4, cnatmodel.AddressFamily_IPV6} {
			k, v := feat(n, f)
			desired[k] = v
		}
	}
	e.mustCommit(desired)
	for k := range desired {
		if st := e.state(k); st != kvapi.StateConfigured {
			t.Errorf("%s: %v, want configured without SNAT addresses", k, st)
		}
	}
	on := [][2]string{{"ip4-unicast", "cnat-input-ip4"}, {"ip6-unicast", "cnat-input-ip6"}, {"ip4-output", "cnat-output-ip4"}, {"ip6-output", "cnat-output-ip6"}}
	for _, f := range on {
		if !e.featureOn("loop0", f[0], f[1]) {
			t.Errorf("%s is off on %s", f[1], f[0])
		}
	}
	if e.featureOn("loop0", "ip4-unicast", "cnat-snat-ip4") || e.featureOn("loop0", "ip6-unicast", "cnat-snat-ip6") {
		t.Error("a cnat-snat feature is on, none was asked for")
	}

	// Drift: cnat-output-ip6 off, cnat-snat-ip4 on behind the agent's back.
	loop0, _ := e.sim.InterfaceByTag("loop0")
	sw := interface_types.InterfaceIndex(loop0.SwIfIndex)
	e.vpp(&feature.FeatureEnableDisable{SwIfIndex: sw, ArcName: "ip6-output", FeatureName: "cnat-output-ip6"}, &feature.FeatureEnableDisableReply{})
	e.vpp(&feature.FeatureEnableDisable{SwIfIndex: sw, Enable: true, ArcName: "ip4-unicast", FeatureName: "cnat-snat-ip4"}, &feature.FeatureEnableDisableReply{})
	a := e.newAgent()
	if err := a.commit(kvapi.WithResync(context.Background(), kvapi.FullResync, true), desired); err != nil {
		t.Fatalf("resync: %v", err)
	}
	for _, f := range on {
		if !e.featureOn("loop0", f[0], f[1]) {
			t.Errorf("%s is off on %s after the resync", f[1], f[0])
		}
	}
	if e.featureOn("loop0", "ip4-unicast", "cnat-snat-ip4") {
		t.Error("cnat-snat-ip4, which NB does not want, is still on after the resync")
	}
	e.sim.ResetMessageCounts()
	if err := a.commit(kvapi.WithResync(context.Background(), kvapi.FullResync, true), desired); err != nil {
		t.Fatal(err)
	}
	if n := e.sim.MessageCount("feature_enable_disable"); n != 0 {
		t.Errorf("a resync without drift sent %d feature_enable_disable", n)
	}
}

// TestAfterAPartialFailureTheNextUpdateSendsEveryTranslation: VPP refuses the first
// translation of an update and takes the second; the scheduler keeps the old value as applied. The next
// update, from that old value to one whose second translation is the old one again,
// must send it: VPP holds the failed update's content, not the applied value's.
func TestAfterAPartialFailureTheNextUpdateSendsEveryTranslation(t *testing.T) {
	e := newEnv(t)
	d := NewTranslationSetDescriptor(vppbase.DescriptorDeps{Log: quietLog(), Ch: e.raw})
	key, old := setOf("default/web", backend("10.96.0.10", 80, "10.1.1.2"), backend("10.96.0.10", 443, "10.1.1.2"))
	md, err := d.Create(key, old)
	if err != nil {
		t.Fatal(err)
	}
	_, next := setOf("default/web", backend("10.96.0.10", 80, "10.1.1.3"), backend("10.96.0.10", 443, "10.1.1.3"))
	if err := e.sim.FailMessage("cnat_translation_update", int32(govppapi.UNSPECIFIED), 1); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Update(key, old, next, md); !errors.Is(err, govppapi.UNSPECIFIED) {
		t.Fatalf("the update VPP refuses part of = %v", err)
	}
	_, back := setOf("default/web", backend("10.96.0.10", 80, "10.1.1.3"), backend("10.96.0.10", 443, "10.1.1.2"))
	if _, err := d.Update(key, old, back, md); err != nil {
		t.Fatal(err)
	}
	got := e.vppTranslations()
	want := []string{"10.96.0.10:80/TCP lb=0 paths=[0.0.0.0:0->10.1.1.3:8080]", "10.96.0.10:443/TCP lb=0 paths=[0.0.0.0:0->10.1.1.2:8080]"}
	if len(got) != 2 || dropID(got[0]) != want[0] || dropID(got[1]) != want[1] {
		t.Errorf("VPP's translations %q, want %q", got, want)
	}
}

// TestANodePortSetGainingAndLosingAnAddressInTheMiddle: a node IP's translation
// merged into the middle of a node-port set (the renderer keeps sets in identity
// order), the other messages shared, costs one cnat_translation_update; one taken
// out of the middle while another's paths change costs one deletion and one update;
// VPP holds exactly the set each time. A shared set whose one new message is
// invalid is refused, naming it.
func TestANodePortSetGainingAndLosingAnAddressInTheMiddle(t *testing.T) {
	e := newEnv(t)
	var ts []*cnatmodel.Translation
	for _, n := range []int{1, 2, 4, 5} {
		ts = append(ts, backend(fmt.Sprintf("192.168.16.%d", n), 30080, "10.1.1.2"))
	}
	key, set := setOf("default/np", ts...)
	e.mustCommit(map[string]proto.Message{key: set})
	check := func(what string, want *cnatmodel.TranslationSet, updates, dels int64) {
		t.Helper()
		if u, d := e.sim.MessageCount("cnat_translation_update"), e.sim.MessageCount("cnat_translation_del"); u != updates || d != dels {
			t.Errorf("%s: %d updates and %d deletions, want %d and %d", what, u, d, updates, dels)
		}
		got := e.vppTranslations()
		if len(got) != len(want.GetTranslations()) {
			t.Fatalf("%s: VPP has %q", what, got)
		}
		for _, tr := range want.GetTranslations() {
			line := cnatmodel.FormatTranslation(tr) + " lb=0 paths=[0.0.0.0:0->" + tr.GetPaths()[0].GetDst().GetAddress() + ":8080]"
			if !slices.ContainsFunc(got, func(g string) bool { return dropID(g) == line }) {
				t.Errorf("%s: VPP has %q, not %q", what, got, line)
			}
		}
	}
	e.sim.ResetMessageCounts()
	_, joined := setOf("default/np", ts[0], ts[1], backend("192.168.16.3", 30080, "10.1.1.2"), ts[2], ts[3])
	e.mustCommit(map[string]proto.Message{key: joined})
	check("an address joined in the middle", joined, 1, 0)

	e.sim.ResetMessageCounts()
	_, left := setOf("default/np", ts[0], joined.Translations[2], backend("192.168.16.4", 30080, "10.1.1.9"), ts[3])
	e.mustCommit(map[string]proto.Message{key: left})
	check("an address gone from the middle, another's paths changed", left, 1, 1)

	bad := &cnatmodel.Translation{VipAddress: "192.168.16.6", VipPort: 30080, Paths: []*cnatmodel.Path{{Dst: ep("fd00::2", 8080)}}}
	_, invalid := setOf("default/np", append(slices.Clone(left.Translations), bad)...)
	err := e.commit(context.Background(), map[string]proto.Message{key: invalid})
	if !strings.Contains(fmt.Sprint(err), "translations[4].paths[0].dst.address fd00::2 is not of the VIP's family IPV4") {
		t.Errorf("a set sharing all but one invalid message: %v, want it refused naming the message", err)
	}
}

// TestASetGainingAnInterfaceEndpointWaitsForIt: a set of address endpoints has no
// dependency; the same set with one more translation to an interface that does not
// exist yet waits for it (the dependencies of a changed set are not taken from the
// value before).
func TestASetGainingAnInterfaceEndpointWaitsForIt(t *testing.T) {
	e := newEnv(t)
	key, set := setOf("default/web", backend("10.96.0.10", 80, "10.1.1.2"))
	e.mustCommit(map[string]proto.Message{key: set})
	if st := e.state(key); st != kvapi.StateConfigured {
		t.Fatalf("set of addresses: %v", st)
	}
	_, more := setOf("default/web", set.Translations[0], &cnatmodel.Translation{VipAddress: "10.96.0.10", VipPort: 443,
		Paths: []*cnatmodel.Path{{Dst: &cnatmodel.Endpoint{Interface: "loop0", Port: 8443}}}})
	e.mustCommit(map[string]proto.Message{key: more})
	if st := e.state(key); st != kvapi.StatePending {
		t.Fatalf("set with a translation to a missing interface: %v, want pending", st)
	}
	loopKey, loop := loopback("loop0", "10.1.1.1/24")
	e.mustCommit(map[string]proto.Message{loopKey: loop})
	if st := e.state(key); st != kvapi.StateConfigured || len(e.vppTranslations()) != 2 {
		t.Fatalf("after the interface: %v, VPP %q", st, e.vppTranslations())
	}
}
