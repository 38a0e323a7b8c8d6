package ipam

import (
	"errors"
	"net"
	"net/http"

	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/plugins/contivconf"
	"github.com/contiv-vpp/contiv-vpp/plugins/rest"
)

// REST paths of the IPAM data.
const (
	// IPAMPath serves NodeIPAMData; ipnet registers it (it knows the node IP) with
	// IPAMDataHandler.
	IPAMPath = "/contiv/v1/ipam"
	// AllocationsPath serves IPAllocations; the IPAM registers it itself.
	AllocationsPath = "/contiv/v1/ipam/allocations"
)

// NodeIPAMData is the body of GET /contiv/v1/ipam.
type NodeIPAMData struct {
	NodeID            uint32 `json:"nodeId"`
	NodeName          string `json:"nodeName"`
	NodeIP            string `json:"nodeIP"`
	PodSubnetThisNode string `json:"podSubnetThisNode"`
	VppHostNetwork    string `json:"vppHostNetwork"`
	// PodSubnetThisNodeIPv6 and VppHostNetworkIPv6 are this node's IPv6 pod subnet and
	// VPP-host subnet on a dual-stack node (left out otherwise).
	PodSubnetThisNodeIPv6 string `json:"podSubnetThisNodeIPv6,omitempty"`
	VppHostNetworkIPv6    string `json:"vppHostNetworkIPv6,omitempty"`
	// Config is the effective ipamConfig, contivCIDR already dissected (config.ipv6:
	// the IPv6 plan).
	Config *contivconf.IPAMConfigForJSON `json:"config"`
}

// ErrNoNodeIP is returned by IPAMData while the node has no IP (e.g. waiting for DHCP).
var ErrNoNodeIP = errors.New("the node has no IP yet")

// noNodeIPMessage is the REST error while the node has no IP, as upstream answers.
const noNodeIPMessage = "Error getting node IP"

// IPAMData builds the body of GET /contiv/v1/ipam for this node, whose IP is nodeIP
// (ipnet knows it: configured, from DHCP or NodeIPAddress).
func (p *Plugin) IPAMData(nodeIP net.IP) (*NodeIPAMData, error) {
	if nodeIP == nil {
		return nil, ErrNoNodeIP
	}
	p.mu.RLock()
	data := &NodeIPAMData{
		NodeID:   p.nodeID,
		NodeName: p.NodeName,
		NodeIP:   nodeIP.String(),
	}
	if p.podSubnet != nil {
		data.PodSubnetThisNode = p.podSubnet.String()
	}
	if p.hostSubnet != nil {
		data.VppHostNetwork = p.hostSubnet.String()
	}
	if p.dual != nil {
		data.PodSubnetThisNodeIPv6, data.VppHostNetworkIPv6 = p.dual.podSubnet.String(), p.dual.hostSubnet.String()
	}
	p.mu.RUnlock()
	data.Config = p.GetIPAMConfigForJSON()
	return data, nil
}

// IPAMDataHandler returns the handler of GET /contiv/v1/ipam; nodeIP returns the
// current node IP (nil while unknown, answered with 500 "Error getting node IP").
func (p *Plugin) IPAMDataHandler(nodeIP func() net.IP) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		data, err := p.IPAMData(nodeIP())
		if errors.Is(err, ErrNoNodeIP) {
			rest.WriteError(w, http.StatusInternalServerError, noNodeIPMessage)
			return
		}
		if err != nil {
			rest.WriteError(w, http.StatusInternalServerError, err.Error())
			return
		}
		rest.WriteJSON(w, http.StatusOK, data)
	}
}

// registerHandlers registers GET /contiv/v1/ipam/allocations.
func (p *Plugin) registerHandlers(reg infra.HandlerRegistrar) {
	reg.HandleFunc("GET "+AllocationsPath, func(w http.ResponseWriter, _ *http.Request) {
		rest.WriteJSON(w, http.StatusOK, p.Allocations())
	})
}
