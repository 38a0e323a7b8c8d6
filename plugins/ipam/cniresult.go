package ipam

import (
	"encoding/json"
	"fmt"
	"net"
	"strings"
)

// cniIPAMResult is the part of a CNI IPAM plugin's result that carries the addresses:
// "ips" (CNI 0.3.0 and later) or "ip4"/"ip6" (CNI 0.1.0/0.2.0).
type cniIPAMResult struct {
	IPs []struct {
		Address string `json:"address"`
	} `json:"ips"`
	IP4 *struct {
		IP string `json:"ip"`
	} `json:"ip4"`
	IP6 *struct {
		IP string `json:"ip"`
	} `json:"ip6"`
}

// podIPFromCNIResult returns the pod address from the JSON result of an external CNI
// IPAM plugin: the first address of the family wanted (IPv6 when ipv6), which for a
// single-stack result is ips[0].address.
func podIPFromCNIResult(data string, ipv6 bool) (net.IP, error) {
	if strings.TrimSpace(data) == "" {
		return nil, fmt.Errorf("the IPAM result is empty")
	}
	var res cniIPAMResult
	if err := json.Unmarshal([]byte(data), &res); err != nil {
		return nil, fmt.Errorf("the IPAM result is not valid JSON: %w", err)
	}
	var candidates []string
	for _, a := range res.IPs {
		candidates = append(candidates, a.Address)
	}
	if res.IP4 != nil {
		candidates = append(candidates, res.IP4.IP)
	}
	if res.IP6 != nil {
		candidates = append(candidates, res.IP6.IP)
	}
	if len(candidates) == 0 {
		return nil, fmt.Errorf("the IPAM result has no addresses")
	}
	family := "IPv4"
	if ipv6 {
		family = "IPv6"
	}
	for _, c := range candidates {
		ip, err := parseAddress(c)
		if err != nil {
			return nil, fmt.Errorf("the IPAM result: %w", err)
		}
		if (ip.To4() == nil) == ipv6 {
			return normalizeIP(ip), nil
		}
	}
	return nil, fmt.Errorf("the IPAM result has no %s address (got %s)", family, strings.Join(candidates, ", "))
}

// parseAddress parses "10.1.1.5/24" or "10.1.1.5".
func parseAddress(s string) (net.IP, error) {
	if ip, _, err := net.ParseCIDR(s); err == nil {
		return ip, nil
	}
	if ip := net.ParseIP(s); ip != nil {
		return ip, nil
	}
	return nil, fmt.Errorf("%q is not an IP address", s)
}
