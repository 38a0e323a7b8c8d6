package cnatplugin

import (
	"context"
	"errors"
	"fmt"
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
	vipKey = cnatmodel.TranslationKey("10.96.0.10", 80, cnatmodel.Protocol_TCP)
	// vip is a ClusterIP with a backend by address and one by interface (loop0).
	vip = &cnatmodel.Translation{Vip: ep("10.96.0.10", 80), AllocPort: true, Paths: []*cnatmodel.Path{
		{Dst: ep("10.1.1.2", 8080)},
		{Dst: &cnatmodel.Endpoint{Interface: "loop0", Port: 8080}, Src: ep("10.1.1.254", 0)},
	}}
)

func TestTranslationIsCreatedUpdatedInPlaceAndDeleted(t *testing.T) {
	e := newEnv(t)
	loopKey, loop := loopback("loop0", "10.1.1.1/24")
	e.mustCommit(map[string]proto.Message{loopKey: loop, vipKey: vip})
	if st := e.state(vipKey); st != kvapi.StateConfigured {
		t.Fatalf("translation %v", st)
	}
	sw, _ := e.sim.InterfaceByTag("loop0")
	got := e.vppTranslations()
	want := fmt.Sprintf("0 10.96.0.10:80/TCP lb=0 paths=[0.0.0.0:0->10.1.1.2:8080 10.1.1.254:0->if%d(10.1.1.1):8080]", sw.SwIfIndex)
	if len(got) != 1 || got[0] != want {
		t.Fatalf("VPP's translations %q, want %q", got, want)
	}

	// A new backend set: the same translation, changed in place.
	e.sim.ResetMessageCounts()
	updated := &cnatmodel.Translation{Vip: ep("10.96.0.10", 80), Paths: []*cnatmodel.Path{{Dst: ep("10.1.1.3", 8080)}}}
	e.mustCommit(map[string]proto.Message{vipKey: updated})
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
	e.mustCommit(map[string]proto.Message{vipKey: maglev})
	if got := e.vppTranslations(); len(got) != 1 || dropID(got[0]) != "10.96.0.10:80/TCP lb=1 paths=[0.0.0.0:0->10.1.1.3:8080]" {
		t.Fatalf("VPP's translations after the change to Maglev %q", got)
	}
	if n := e.sim.MessageCount("cnat_translation_del"); n != 1 {
		t.Errorf("the change to Maglev sent %d cnat_translation_del, want 1", n)
	}

	// A second translation gets its own id; deleting the first frees it by id.
	dnsKey := cnatmodel.TranslationKey("10.96.0.10", 53, cnatmodel.Protocol_UDP)
	dns := &cnatmodel.Translation{Vip: ep("10.96.0.10", 53), Protocol: cnatmodel.Protocol_UDP, Paths: []*cnatmodel.Path{{Dst: ep("10.1.1.5", 53)}}}
	e.mustCommit(map[string]proto.Message{dnsKey: dns})
	e.mustCommit(map[string]proto.Message{vipKey: nil})
	if got := e.vppTranslations(); len(got) != 1 || !strings.HasPrefix(got[0], "1 10.96.0.10:53/UDP") {
		t.Fatalf("VPP's translations after deleting the first %q", got)
	}
	md, ok := e.kvs.GetMetadataMap(TranslationDescriptorName).GetValue(dnsKey)
	if !ok || md.(*TranslationMetadata).ID != 1 {
		t.Errorf("metadata of %s = %v, %v; want id 1", dnsKey, md, ok)
	}
}

func TestTranslationWaitsForTheInterfaceOfAnEndpoint(t *testing.T) {
	e := newEnv(t)
	e.mustCommit(map[string]proto.Message{vipKey: vip})
	if st := e.state(vipKey); st != kvapi.StatePending {
		t.Fatalf("translation before its interface: %v", st)
	}
	if got := e.vppTranslations(); len(got) != 0 {
		t.Fatalf("VPP has %q before the interface", got)
	}
	loopKey, loop := loopback("loop0", "10.1.1.1/24")
	e.mustCommit(map[string]proto.Message{loopKey: loop})
	if st := e.state(vipKey); st != kvapi.StateConfigured || len(e.vppTranslations()) != 1 {
		t.Fatalf("translation after its interface: %v, VPP %q", st, e.vppTranslations())
	}
	// Removing the interface takes the translation out first.
	e.mustCommit(map[string]proto.Message{loopKey: nil})
	if st := e.state(vipKey); st != kvapi.StatePending || len(e.vppTranslations()) != 0 {
		t.Fatalf("translation after its interface went: %v, VPP %q", st, e.vppTranslations())
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
	desired[vipKey] = vip
	e.mustCommit(desired)
	want := e.vppTranslations()

	// Drift behind the agent's back: its translation and feature gone, a stray
	// translation and other SNAT addresses.
	e.vpp(&cnat.CnatTranslationDel{ID: 0}, &cnat.CnatTranslationDelReply{})
	stray, err := translationToAPI(&cnatmodel.Translation{Vip: ep("10.96.0.99", 53), Protocol: cnatmodel.Protocol_UDP,
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
	if len(got) != 1 || dropID(got[0]) != dropID(want[0]) || strings.Contains(got[0], "10.96.0.99") {
		t.Errorf("VPP's translations after resync %q, want %q", got, want)
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
	err := e.commit(kvapi.WithRetry(context.Background(), time.Second, 3, false), map[string]proto.Message{vipKey: vip})
	if !errors.Is(err, govppapi.UNSPECIFIED) || !strings.Contains(err.Error(), "add cnat translation 10.96.0.10:80/TCP") {
		t.Fatalf("commit = %v, want VPP's failure naming the translation", err)
	}
	e.clock.AwaitWaiting(t)
	e.clock.Step(time.Second)
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "the retried translation in VPP", func() bool {
		return e.state(vipKey) == kvapi.StateConfigured
	})
	if got := e.vppTranslations(); len(got) != 1 {
		t.Fatalf("VPP's translations after the retry %q", got)
	}

	// A permanent refusal (INVALID_VALUE: VPP refuses the request for what it says)
	// is not retried.
	if err := e.sim.FailMessage("cnat_translation_update", int32(govppapi.INVALID_VALUE), 1); err != nil {
		t.Fatal(err)
	}
	dnsKey := cnatmodel.TranslationKey("10.96.0.10", 53, cnatmodel.Protocol_UDP)
	err = e.commit(kvapi.WithRetry(context.Background(), time.Second, 3, false), map[string]proto.Message{
		dnsKey: &cnatmodel.Translation{Vip: ep("10.96.0.10", 53), Protocol: cnatmodel.Protocol_UDP, Paths: []*cnatmodel.Path{{Dst: ep("10.1.1.5", 53)}}},
	})
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
	desired[vipKey] = vip
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
	for i := range n {
		v := &cnatmodel.Translation{Vip: ep(fmt.Sprintf("10.96.%d.%d", i/250, i%250+1), 80),
			Paths: []*cnatmodel.Path{{Dst: ep(fmt.Sprintf("10.1.%d.%d", i/250, i%250+1), 8080)}}}
		key, _ := cnatmodel.ModelKey(v)
		burst[key] = v
	}
	e.mustCommit(burst)
	got := e.vppTranslations()
	if len(got) != n {
		t.Fatalf("VPP has %d translations, want %d", len(got), n)
	}
	byVIP := map[string]string{}
	for _, line := range got {
		id, rest, _ := strings.Cut(line, " ")
		vip, _, _ := strings.Cut(rest, "/")
		byVIP[vip] = id
	}
	mds := e.kvs.GetMetadataMap(TranslationDescriptorName)
	for key := range burst {
		vipAddr, port, _, _ := cnatmodel.ParseTranslationKey(key)
		md, ok := mds.GetValue(key)
		if !ok || fmt.Sprint(md.(*TranslationMetadata).ID) != byVIP[fmt.Sprintf("%s:%d", vipAddr, port)] {
			t.Fatalf("%s: metadata %v, VPP's id %s", key, md, byVIP[fmt.Sprintf("%s:%d", vipAddr, port)])
		}
	}
}

func TestAnInvalidValueIsRefusedBeforeVPPSeesIt(t *testing.T) {
	e := newEnv(t)
	e.sim.ResetMessageCounts()
	bad := &cnatmodel.Translation{Vip: ep("10.96.0.10", 80), Paths: []*cnatmodel.Path{{Dst: ep("fd00::2", 80)}}}
	err := e.commit(context.Background(), map[string]proto.Message{vipKey: bad})
	var ive *kvapi.InvalidValueError
	if !errors.As(err, &ive) || !strings.Contains(err.Error(), "paths[0].dst.address fd00::2 is not of the VIP's family IPV4") {
		t.Fatalf("commit = %v, want the invalid field named", err)
	}
	if st := e.state(vipKey); st != kvapi.StateInvalid {
		t.Errorf("state %v, want INVALID", st)
	}
	if n := e.sim.MessageCount("cnat_translation_update"); n != 0 {
		t.Errorf("VPP got %d cnat_translation_update for an invalid value", n)
	}
}

func TestDeleteWithoutMetadataFindsTheIDInVPP(t *testing.T) {
	e := newEnv(t)
	d := NewTranslationDescriptor(vppbase.DescriptorDeps{Log: quietLog(), Ch: e.raw})
	first := &cnatmodel.Translation{Vip: ep("10.96.0.11", 80), Paths: []*cnatmodel.Path{{Dst: ep("10.1.1.2", 80)}}}
	if _, err := d.Create(cnatmodel.TranslationKey("10.96.0.11", 80, cnatmodel.Protocol_TCP), first); err != nil {
		t.Fatal(err)
	}
	second := &cnatmodel.Translation{Vip: ep("10.96.0.10", 80), Paths: []*cnatmodel.Path{{Dst: ep("10.1.1.3", 80)}}}
	md, err := d.Create(vipKey, second)
	if err != nil || md.(*TranslationMetadata).ID != 1 {
		t.Fatalf("Create = %v, %v; want id 1", md, err)
	}
	if err := d.Delete(vipKey, second, nil); err != nil {
		t.Fatal(err)
	}
	if got := e.vppTranslations(); len(got) != 1 || !strings.HasPrefix(got[0], "0 10.96.0.11:80/TCP") {
		t.Fatalf("VPP's translations %q, want only 10.96.0.11:80", got)
	}
	err = d.Delete(vipKey, second, &TranslationMetadata{ID: 1})
	if !errors.Is(err, govppapi.NO_SUCH_ENTRY) || !strings.Contains(err.Error(), "delete cnat translation 10.96.0.10:80/TCP (id 1)") {
		t.Errorf("deleting it again = %v, want VPP's NO_SUCH_ENTRY naming the translation", err)
	}
}

func TestIPv6TranslationAndInterfaceSNATAddressesSurviveAResyncUnchanged(t *testing.T) {
	e := newEnv(t)
	loopKey, loop := loopback("loop0", "10.1.1.1/24", "fd00:1::1/64")
	v6Key := cnatmodel.TranslationKey("fd00::a", 53, cnatmodel.Protocol_UDP)
	desired := map[string]proto.Message{
		loopKey: loop,
		v6Key: &cnatmodel.Translation{Vip: ep("FD00::A", 53), Protocol: cnatmodel.Protocol_UDP, Paths: []*cnatmodel.Path{
			{Dst: ep("fd00:1::2", 5353)},
			{Dst: &cnatmodel.Endpoint{Interface: "loop0", InterfaceFamily: cnatmodel.AddressFamily_IPV6, Port: 5353}},
		}},
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
