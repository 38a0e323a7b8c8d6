package stn

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
)

// RecordVersion is the version of the record file format this package writes.
const RecordVersion = 1

// Record is what the host had configured on the NIC before VPP took it.
type Record struct {
	// Version is the file format version (RecordVersion).
	Version int `json:"version"`
	// Link is the Linux name of the NIC.
	Link string `json:"link"`
	// MAC is its hardware address.
	MAC string `json:"mac,omitempty"`
	// MTU is its MTU.
	MTU int `json:"mtu"`
	// Addrs are its addresses, both families, without IPv6 link-local ones (the kernel
	// makes those again).
	Addrs []Addr `json:"addrs"`
	// Routes are the routes out of it, the default route included, without the
	// routes the kernel makes itself (prefix routes of the addresses, local table).
	Routes []Route `json:"routes"`
	// Link settings that Steal changes, as they were.
	ARP         bool   `json:"arp"`
	RPFilter    string `json:"rpFilter,omitempty"`
	DisableIPv6 string `json:"disableIPv6,omitempty"`
}

// Addr is one address of the NIC.
type Addr struct {
	// CIDR is the address with its prefix length, e.g. "192.168.16.1/24".
	CIDR string `json:"cidr"`
	// Dynamic is set for an address with a finite lifetime (from DHCP or SLAAC, not
	// IFA_F_PERMANENT); ValidLft and PreferredLft are then its lifetimes in seconds.
	Dynamic      bool `json:"dynamic,omitempty"`
	ValidLft     int  `json:"validLft,omitempty"`
	PreferredLft int  `json:"preferredLft,omitempty"`
	// Broadcast is the IPv4 broadcast address, if any.
	Broadcast string `json:"broadcast,omitempty"`
}

// Route is one route out of the NIC.
type Route struct {
	// Dst is the destination, "0.0.0.0/0" or "::/0" for a default route.
	Dst string `json:"dst"`
	// Gw is the next hop, "" for a link route.
	Gw string `json:"gw,omitempty"`
	// Src is the preferred source address, if any.
	Src      string `json:"src,omitempty"`
	Priority int    `json:"priority,omitempty"`
	Protocol int    `json:"protocol,omitempty"`
	Scope    int    `json:"scope,omitempty"`
	Table    int    `json:"table,omitempty"`
}

// IPs returns the addresses of the record, in order.
func (r *Record) IPs() []*net.IPNet {
	var out []*net.IPNet
	for _, a := range r.Addrs {
		ip, n, err := net.ParseCIDR(a.CIDR)
		if err != nil {
			continue // Validate refuses such records
		}
		out = append(out, &net.IPNet{IP: ip, Mask: n.Mask})
	}
	return out
}

// DefaultGateway returns the next hop of the record's default route of the family of
// ip, or nil.
func (r *Record) DefaultGateway(ip net.IP) net.IP {
	v4 := ip.To4() != nil
	for _, rt := range r.Routes {
		_, dst, err := net.ParseCIDR(rt.Dst)
		if err != nil || rt.Gw == "" {
			continue
		}
		if ones, _ := dst.Mask.Size(); ones == 0 && (dst.IP.To4() != nil) == v4 {
			return net.ParseIP(rt.Gw)
		}
	}
	return nil
}

// Validate checks a record read from a file, naming the field and the value at fault.
func (r *Record) Validate() error {
	if r.Version != RecordVersion {
		return fmt.Errorf("version: %d is not %d", r.Version, RecordVersion)
	}
	if r.Link == "" {
		return errors.New("link: empty")
	}
	if r.MTU < 0 {
		return fmt.Errorf("mtu: %d is negative", r.MTU)
	}
	for i, a := range r.Addrs {
		if _, _, err := net.ParseCIDR(a.CIDR); err != nil {
			return fmt.Errorf("addrs[%d].cidr: %q is not an address with a prefix length", i, a.CIDR)
		}
	}
	for i, rt := range r.Routes {
		if _, _, err := net.ParseCIDR(rt.Dst); err != nil {
			return fmt.Errorf("routes[%d].dst: %q is not a prefix", i, rt.Dst)
		}
		if rt.Gw != "" && net.ParseIP(rt.Gw) == nil {
			return fmt.Errorf("routes[%d].gw: %q is not an IP address", i, rt.Gw)
		}
		if rt.Src != "" && net.ParseIP(rt.Src) == nil {
			return fmt.Errorf("routes[%d].src: %q is not an IP address", i, rt.Src)
		}
	}
	return nil
}

// Save writes the record to path so that it survives a crash: to a temporary file in
// the same directory, synced, then renamed over path (and the directory synced).
func Save(path string, r *Record) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("stn record %s: %w", path, err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("stn record %s: %w", path, err)
	}
	f, err := os.CreateTemp(dir, filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("stn record %s: %w", path, err)
	}
	tmp := f.Name()
	_, werr := f.Write(data)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp, path)
	}
	if werr != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("stn record %s: %w", path, werr)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// Load reads the record at path; it returns (nil, nil) when there is none.
func Load(path string) (*Record, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("stn record %s: %w", path, err)
	}
	r := &Record{}
	if err := json.Unmarshal(data, r); err != nil {
		return nil, fmt.Errorf("stn record %s: %w", path, err)
	}
	if err := r.Validate(); err != nil {
		return nil, fmt.Errorf("stn record %s: %w", path, err)
	}
	return r, nil
}

// Remove deletes the record at path; a missing file is not an error.
func Remove(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("stn record %s: %w", path, err)
	}
	return nil
}
