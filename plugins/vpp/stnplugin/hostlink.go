package stnplugin

import (
	"fmt"

	"github.com/vishvananda/netlink"
	"google.golang.org/protobuf/types/known/wrapperspb"

	linuxif "github.com/contiv-vpp/contiv-vpp/api/models/linux/interfaces"
	stnmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/stn"
	"github.com/contiv-vpp/contiv-vpp/pkg/stn"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

// HostLinkDescriptorName names the descriptor of stolen host links.
const HostLinkDescriptorName = "vpp-stn-host-link"

// LinkExistsFunc tells whether the Linux link exists in the agent's namespace (nil:
// it does).
type LinkExistsFunc func(name string) error

// NetlinkLinkExists is the default LinkExistsFunc: netlink in the agent's namespace.
func NetlinkLinkExists(name string) error {
	if _, err := netlink.LinkByName(name); err != nil {
		return fmt.Errorf("link %q: %w", name, err)
	}
	return nil
}

// NewHostLinkDescriptor returns the descriptor of stolen host links: a value states
// that the host's link exists (Create checks it, a retriable failure while it does
// not), changes nothing on it (the host owns it, Delete does nothing), and derives
// linux/interface/host-name/<name>, the dependency of a VPP af_packet interface on
// the link. Every check is one netlink lookup.
func NewHostLinkDescriptor(exists LinkExistsFunc) *kvapi.KVDescriptor {
	if exists == nil {
		exists = NetlinkLinkExists
	}
	return kvapi.Typed(kvapi.TypedDescriptor[*stnmodel.HostLink, kvapi.Metadata]{
		Name:        HostLinkDescriptorName,
		NBKeyPrefix: stnmodel.HostLinkPrefix,
		KeySelector: func(key string) bool {
			_, ok := stnmodel.ParseHostLinkKey(key)
			return ok
		},
		Validate: validateHostLink,
		Create: func(_ string, v *stnmodel.HostLink) (kvapi.Metadata, error) {
			if err := exists(v.GetName()); err != nil {
				return nil, fmt.Errorf("stolen host link: %w", err)
			}
			return nil, nil
		},
		Delete: func(string, *stnmodel.HostLink, kvapi.Metadata) error { return nil },
		// Retrieve: the wanted links that exist are there as wanted.
		Retrieve: func(correlate []kvapi.KVWithMetadata) ([]kvapi.KVWithMetadata, error) {
			var out []kvapi.KVWithMetadata
			for _, kv := range correlate {
				if v, ok := kv.Value.(*stnmodel.HostLink); ok && exists(v.GetName()) == nil {
					out = append(out, kvapi.KVWithMetadata{Key: kv.Key, Value: v, Origin: kvapi.FromNB})
				}
			}
			return out, nil
		},
		IsRetriableFailure: func(error) bool { return true }, // the link may appear
		DerivedValues: func(_ string, v *stnmodel.HostLink) []kvapi.KeyValuePair {
			return []kvapi.KeyValuePair{{Key: linuxif.InterfaceHostNameKey(v.GetName()), Value: wrapperspb.String(v.GetName())}}
		},
	})
}

// validateHostLink checks the name (a kernel-valid link name) and that the key is the
// value's.
func validateHostLink(key string, v *stnmodel.HostLink) error {
	if err := stn.CheckLinkName(v.GetName()); err != nil {
		return kvapi.NewInvalidValueError(fmt.Errorf("name: %w", err), "name")
	}
	if want := stnmodel.HostLinkKey(v.GetName()); key != "" && key != want {
		return kvapi.NewInvalidValueError(fmt.Errorf("host link key %q does not match its value (want %q)", key, want), "name")
	}
	return nil
}
