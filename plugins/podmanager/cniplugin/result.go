package cniplugin

import (
	"fmt"
	"net"

	"github.com/containernetworking/cni/pkg/types"
	types100 "github.com/containernetworking/cni/pkg/types/100"

	"github.com/contiv-vpp/contiv-vpp/plugins/podmanager/cni"
)

// replyToResult turns the agent's reply to an ADD into a CNI result. Interfaces without
// a sandbox are put into netns (the pod's namespace); every IP points at its interface;
// the DNS entries of the reply are merged into one (the first domain wins), and when the
// reply has none the configuration's dns is used.
func replyToResult(reply *cni.CNIReply, netns string, confDNS types.DNS) (*types100.Result, error) {
	res := &types100.Result{CNIVersion: types100.ImplementedSpecVersion}
	for i, iface := range reply.GetInterfaces() {
		if iface.GetName() == "" {
			return nil, fmt.Errorf("interface %d has no name", i)
		}
		sandbox := iface.GetSandbox()
		if sandbox == "" {
			sandbox = netns
		}
		res.Interfaces = append(res.Interfaces, &types100.Interface{Name: iface.GetName(), Mac: iface.GetMac(), Sandbox: sandbox})
		for _, ip := range iface.GetIpAddresses() {
			addr, err := parseAddress(ip.GetAddress())
			if err != nil {
				return nil, fmt.Errorf("interface %s: %w", iface.GetName(), err)
			}
			if isV6 := addr.IP.To4() == nil; isV6 != (ip.GetVersion() == cni.CNIReply_Interface_IP_IPV6) {
				return nil, fmt.Errorf("interface %s: address %s is not of version %v", iface.GetName(), ip.GetAddress(), ip.GetVersion())
			}
			cfg := &types100.IPConfig{Interface: types100.Int(i), Address: *addr}
			if gw := ip.GetGateway(); gw != "" {
				if cfg.Gateway = net.ParseIP(gw); cfg.Gateway == nil {
					return nil, fmt.Errorf("interface %s: gateway %q is not an IP address", iface.GetName(), gw)
				}
			}
			res.IPs = append(res.IPs, cfg)
		}
	}
	for _, r := range reply.GetRoutes() {
		_, dst, err := net.ParseCIDR(r.GetDst())
		if err != nil {
			return nil, fmt.Errorf("route destination %q: %w", r.GetDst(), err)
		}
		route := &types.Route{Dst: *dst}
		if gw := r.GetGw(); gw != "" {
			if route.GW = net.ParseIP(gw); route.GW == nil {
				return nil, fmt.Errorf("route to %s: gateway %q is not an IP address", r.GetDst(), gw)
			}
		}
		res.Routes = append(res.Routes, route)
	}
	for _, d := range reply.GetDns() {
		if res.DNS.Domain == "" {
			res.DNS.Domain = d.GetDomain()
		}
		res.DNS.Nameservers = append(res.DNS.Nameservers, d.GetNameservers()...)
		res.DNS.Search = append(res.DNS.Search, d.GetSearch()...)
		res.DNS.Options = append(res.DNS.Options, d.GetOptions()...)
	}
	if res.DNS.IsEmpty() {
		res.DNS = *confDNS.Copy()
	}
	return res, nil
}

// parseAddress parses an address with its prefix length, keeping the host part
// ("10.1.1.2/24" stays 10.1.1.2/24, not 10.1.1.0/24).
func parseAddress(s string) (*net.IPNet, error) {
	ip, n, err := net.ParseCIDR(s)
	if err != nil {
		return nil, fmt.Errorf("address %q: %w", s, err)
	}
	if v4 := ip.To4(); v4 != nil {
		ip = v4
	}
	return &net.IPNet{IP: ip, Mask: n.Mask}, nil
}
