package l3plugin

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/sirupsen/logrus"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/proto"

	linuxl3 "github.com/contiv-vpp/contiv-vpp/api/models/linux/l3"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/linux/ifplugin"
	"github.com/contiv-vpp/contiv-vpp/plugins/linux/internal/linuxcalls"
)

// ARPDescriptorName names the descriptor of Linux static ARP entries.
const ARPDescriptorName = "linux-arp"

// arpDescriptor implements the callbacks of the ARP descriptor.
type arpDescriptor struct {
	base
}

// NewARPDescriptor returns the descriptor of Linux static ARP entries.
func NewARPDescriptor(deps DescriptorDeps) *kvapi.KVDescriptor {
	d := &arpDescriptor{base: newBase(deps, ARPDescriptorName)}
	return kvapi.Typed(kvapi.TypedDescriptor[*linuxl3.ARPEntry, kvapi.Metadata]{
		Name:        ARPDescriptorName,
		NBKeyPrefix: linuxl3.ARPPrefix,
		KeySelector: func(key string) bool {
			_, _, ok := linuxl3.ParseARPEntryKey(key)
			return ok
		},
		ValueComparator: func(_ string, a, b *linuxl3.ARPEntry) bool { return EquivalentARPs(a, b) },
		Validate:        func(key string, v *linuxl3.ARPEntry) error { return ValidateARP(key, v) },
		Create:          func(_ string, v *linuxl3.ARPEntry) (kvapi.Metadata, error) { return nil, d.set(v, "add") },
		Update: func(_ string, _, v *linuxl3.ARPEntry, _ kvapi.Metadata) (kvapi.Metadata, error) {
			return nil, d.set(v, "update")
		},
		Delete:               func(_ string, v *linuxl3.ARPEntry, _ kvapi.Metadata) error { return d.delete(v) },
		Retrieve:             d.retrieve,
		IsRetriableFailure:   linuxcalls.IsRetriable,
		Dependencies:         func(_ string, v *linuxl3.ARPEntry) []kvapi.Dependency { return ARPDependencies(v) },
		RetrieveDependencies: []string{ifplugin.InterfaceDescriptorName},
	})
}

// parseARP parses and checks an ARP entry; the error names every wrong field.
func parseARP(a *linuxl3.ARPEntry) (netip.Addr, net.HardwareAddr, error) {
	var (
		problems []string
		fields   []string
	)
	if a.GetInterface() == "" {
		fields, problems = append(fields, "interface"), append(problems, "empty interface")
	}
	ip, err := netip.ParseAddr(a.GetIpAddress())
	if err != nil || ip.Zone() != "" {
		fields = append(fields, "ip_address")
		problems = append(problems, fmt.Sprintf("ip_address %q is not an IP address", a.GetIpAddress()))
	}
	hw, err := linuxcalls.ParseMAC(a.GetHwAddress())
	if err != nil {
		fields, problems = append(fields, "hw_address"), append(problems, "hw_address "+err.Error())
	}
	if len(problems) > 0 {
		return netip.Addr{}, nil, kvapi.NewInvalidValueError(errors.New(strings.Join(problems, "; ")), fields...)
	}
	return ip.Unmap(), hw, nil
}

// ValidateARP checks an ARP entry and that key is its key; the error is an
// *kvapi.InvalidValueError naming the wrong fields and values.
func ValidateARP(key string, a *linuxl3.ARPEntry) error {
	if _, _, err := parseARP(a); err != nil {
		return err
	}
	if want := linuxl3.ARPEntryKey(a.GetInterface(), a.GetIpAddress()); key != "" && key != want {
		return kvapi.NewInvalidValueError(fmt.Errorf("ARP key %q does not match its value (want %q)", key, want),
			"interface", "ip_address")
	}
	return nil
}

// EquivalentARPs reports whether a and b configure the same entry (addresses
// compared in canonical form).
func EquivalentARPs(a, b *linuxl3.ARPEntry) bool {
	ipA, hwA, errA := parseARP(a)
	ipB, hwB, errB := parseARP(b)
	if errA != nil || errB != nil {
		return proto.Equal(a, b)
	}
	return a.GetInterface() == b.GetInterface() && ipA == ipB && hwA.String() == hwB.String()
}

// ARPDependencies lists what an ARP entry needs: its interface.
func ARPDependencies(a *linuxl3.ARPEntry) []kvapi.Dependency {
	if a.GetInterface() == "" {
		return nil
	}
	return []kvapi.Dependency{ifaceDependency(a.GetInterface())}
}

// neigh builds the kernel neighbour of an entry.
func neigh(ip netip.Addr, hw net.HardwareAddr, linkIndex int) *netlink.Neigh {
	family := unix.AF_INET
	if ip.Is6() {
		family = unix.AF_INET6
	}
	return &netlink.Neigh{
		LinkIndex:    linkIndex,
		Family:       family,
		State:        netlink.NUD_PERMANENT,
		IP:           net.IP(ip.AsSlice()),
		HardwareAddr: hw,
	}
}

// set adds or replaces the permanent neighbour; op names the operation in
// messages.
func (d *arpDescriptor) set(a *linuxl3.ARPEntry, op string) error {
	ip, hw, err := parseARP(a)
	if err != nil {
		return err
	}
	l, err := d.openLink(a.GetInterface())
	if err != nil {
		return fmt.Errorf("%s ARP entry %s: %w", op, a.GetIpAddress(), err)
	}
	defer l.close()
	if err := l.h.NeighSet(neigh(ip, hw, l.link.Attrs().Index)); err != nil {
		return fmt.Errorf("%s ARP entry %s -> %s on %q in namespace %s: %w", op, ip, hw, l.link.Attrs().Name, l.path, err)
	}
	d.log.WithFields(logrus.Fields{"ip": ip, "mac": hw, "interface": a.GetInterface(), "namespace": l.path}).
		Info("linux ARP entry set")
	return nil
}

// delete removes the neighbour; one whose link or namespace is gone is gone
// too.
func (d *arpDescriptor) delete(a *linuxl3.ARPEntry) error {
	ip, hw, err := parseARP(a)
	if err != nil {
		return err
	}
	l, err := d.openLink(a.GetInterface())
	if err != nil {
		if linuxcalls.IsGone(err) {
			return nil
		}
		return fmt.Errorf("delete ARP entry %s: %w", a.GetIpAddress(), err)
	}
	defer l.close()
	if err := l.h.NeighDel(neigh(ip, hw, l.link.Attrs().Index)); err != nil && !linuxcalls.IsGone(err) {
		return fmt.Errorf("delete ARP entry %s on %q in namespace %s: %w", ip, l.link.Attrs().Name, l.path, err)
	}
	d.log.WithFields(logrus.Fields{"ip": ip, "interface": a.GetInterface(), "namespace": l.path}).
		Info("linux ARP entry deleted")
	return nil
}

// retrieve reads back the correlated ARP entries (permanent neighbours only).
func (d *arpDescriptor) retrieve(correlate []kvapi.KVWithMetadata) ([]kvapi.KVWithMetadata, error) {
	cache := &linkCache{b: &d.base, links: make(map[string]*ifLink)}
	defer cache.closeAll()
	type listKey struct {
		iface  string
		family int
	}
	lists := make(map[listKey][]netlink.Neigh)
	var out []kvapi.KVWithMetadata
	for _, kv := range correlate {
		a, ok := kv.Value.(*linuxl3.ARPEntry)
		if !ok {
			continue
		}
		ip, hw, err := parseARP(a)
		if err != nil {
			continue
		}
		l, err := cache.get(a.GetInterface())
		if err != nil {
			return nil, fmt.Errorf("retrieve ARP entry %s: %w", a.GetIpAddress(), err)
		}
		if l == nil {
			continue
		}
		family := unix.AF_INET
		if ip.Is6() {
			family = unix.AF_INET6
		}
		lk := listKey{a.GetInterface(), family}
		neighs, listed := lists[lk]
		if !listed {
			neighs, err = linuxcalls.Retry(func() ([]netlink.Neigh, error) { return l.h.NeighList(l.link.Attrs().Index, family) })
			if err != nil {
				return nil, fmt.Errorf("list neighbours of %s in namespace %s: %w", a.GetInterface(), l.path, err)
			}
			lists[lk] = neighs
		}
		for _, n := range neighs {
			nip, ok := netip.AddrFromSlice(n.IP)
			if !ok || nip.Unmap() != ip || n.State&netlink.NUD_PERMANENT == 0 {
				continue
			}
			v := proto.Clone(a).(*linuxl3.ARPEntry)
			if n.HardwareAddr.String() != hw.String() {
				v.HwAddress = n.HardwareAddr.String()
			}
			out = append(out, kvapi.KVWithMetadata{Key: kv.Key, Value: v, Origin: kvapi.FromNB})
			break
		}
	}
	return out, nil
}
