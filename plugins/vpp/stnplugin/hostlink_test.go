package stnplugin

import (
	"errors"
	"strings"
	"testing"

	linuxif "github.com/contiv-vpp/contiv-vpp/api/models/linux/interfaces"
	stnmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/stn"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

// A stolen host link is there only while the link exists (a retriable failure
// otherwise), is never touched, and announces linux/interface/host-name/<link>: what a
// VPP af_packet interface on the link waits for.
func TestHostLinkStatesTheLinkExistsAndAnnouncesItsHostName(t *testing.T) {
	links := map[string]bool{"eth0": true}
	d := NewHostLinkDescriptor(func(name string) error {
		if !links[name] {
			return errors.New("Link not found")
		}
		return nil
	})
	key, eth1 := stnmodel.HostLinkKey("eth1"), &stnmodel.HostLink{Name: "eth1"}
	if !d.KeySelector(key) || d.KeySelector("config/vpp/stn/v2/host-link/") {
		t.Fatalf("KeySelector: %q not selected, or the empty name selected", key)
	}
	if _, err := d.Create(key, eth1); err == nil || !d.IsRetriableFailure(err) || !strings.Contains(err.Error(), "Link not found") {
		t.Errorf("Create of a missing link = %v, want a retriable failure naming it", err)
	}
	got, err := d.Retrieve([]kvapi.KVWithMetadata{{Key: key, Value: eth1}})
	if err != nil || len(got) != 0 {
		t.Errorf("Retrieve of a missing link = %v, %v; want nothing", got, err)
	}
	links["eth1"] = true
	if _, err := d.Create(key, eth1); err != nil {
		t.Errorf("Create of an existing link: %v", err)
	}
	if got, err := d.Retrieve([]kvapi.KVWithMetadata{{Key: key, Value: eth1}}); err != nil || len(got) != 1 || got[0].Key != key {
		t.Errorf("Retrieve of an existing link = %v, %v; want it", got, err)
	}
	derived := d.DerivedValues(key, eth1)
	if len(derived) != 1 || derived[0].Key != linuxif.InterfaceHostNameKey("eth1") {
		t.Errorf("DerivedValues = %v, want %s", derived, linuxif.InterfaceHostNameKey("eth1"))
	}
	if err := d.Delete(key, eth1, nil); err != nil || !links["eth1"] {
		t.Errorf("Delete = %v; want nothing done to the host's link", err)
	}
	for _, bad := range []*stnmodel.HostLink{{Name: ""}, {Name: "a/b"}, {Name: "0123456789abcdef"}} {
		if err := d.Validate(stnmodel.HostLinkKey(bad.GetName()), bad); err == nil || !strings.Contains(err.Error(), "name") {
			t.Errorf("Validate(%q) = %v, want an error naming the field", bad.GetName(), err)
		}
	}
	if err := d.Validate(stnmodel.HostLinkKey("eth0"), eth1); err == nil {
		t.Error("Validate of a value under another link's key passed")
	}
}
