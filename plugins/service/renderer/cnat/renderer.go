package cnat

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/sirupsen/logrus"

	l3 "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l3"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/plugins/contivconf"
	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/ipam"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/internal/rejects"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/internal/shares"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/renderer"
)

// IPNet is the part of the ipnet plugin's API that the renderer uses.
type IPNet interface {
	// GetNodeIP returns this node's IP and network.
	GetNodeIP() (ip net.IP, network *net.IPNet)
	// GetHostInterconnectIfName returns the VPP interface connecting VPP with the host.
	GetHostInterconnectIfName() string
	// GetVxlanBVIIfName returns the BVI of the VXLAN bridge domain, "" without overlay.
	GetVxlanBVIIfName() string
}

// Deps lists what the renderer needs.
type Deps struct {
	// Log receives the renderer's messages (nil: infra.LoggerOr's default).
	Log logrus.FieldLogger
	// ContivConf gives the VRFs, the interfaces and the SNAT settings.
	ContivConf contivconf.API
	// IPAM gives this node's and the cluster's ranges of each family.
	IPAM ipam.API
	// IPNet gives this node's IP and the infrastructure interfaces.
	IPNet IPNet
	// IPv4 makes the renderer serve IPv4 services too (serviceRenderer: cnat); it
	// always serves IPv6 ones.
	IPv4 bool
	// Maglev makes the translations of external traffic (node ports, external and
	// load balancer IPs) use VPP's Maglev path selection (service.conf's
	// serviceLoadBalancing: maglev), so that every node sends a flow to the same
	// backend; cluster IPs keep lb_type DEFAULT.
	Maglev bool
}

// Renderer renders services into VPP cnat configuration; see the package
// documentation. It is a renderer.Renderer; its methods are called from the event
// loop only.
type Renderer struct {
	Deps

	// What the last resync learned about this node.
	mainVRF, podVRF  uint32
	nodeIP4, nodeIP6 string // this node's IPs: the source of masqueraded traffic
	// snatIP4 is the IPv4 SNAT address, snatOut whether pods' traffic leaving the
	// cluster is source-NATed (snat.go learnSNAT).
	snatIP4 string
	snatOut bool
	// nodeAddrs are the node IPs of the cluster (node ports) of the families served,
	// nodeAddrSet their texts, nodeGen counts their changes.
	nodeAddrs   []renderer.Address
	nodeAddrSet map[string]bool
	nodeGen     uint64
	// renderedWith is what the services of rendered were rendered with.
	renderedWith renderInputs
	// infraIfs are the interfaces that are not pods' (uplinks, host interconnect,
	// VXLAN BVI); hostIf is the host interconnect.
	infraIfs renderer.Interfaces
	hostIf   string
	// ifs are the frontend and backend interfaces whose keys are staged.
	ifs renderer.Interfaces
	// rendered holds what was staged for each service, by ID.
	rendered map[renderer.ServiceID]*renderedService
	// ownership holds the service owning each translation staged (owners.go).
	ownership ownership
	// routeUsers holds, by address, the services that want a reject or drop route
	// on it (reject.go).
	routeUsers rejects.Users
	// routes are the routes staged, by address.
	routes map[string]l3.Route_RouteType
	// frontendIfs and backendIfs are the interface sets last given.
	frontendIfs, backendIfs renderer.Interfaces
}

var _ renderer.Renderer = (*Renderer)(nil)

// Init checks the dependencies and prepares the renderer.
func (rndr *Renderer) Init() error {
	rndr.Log = infra.LoggerOr(rndr.Log, "cnat-renderer")
	switch {
	case rndr.ContivConf == nil:
		return errors.New("cnat renderer: Deps.ContivConf is required")
	case rndr.IPAM == nil:
		return errors.New("cnat renderer: Deps.IPAM is required")
	case rndr.IPNet == nil:
		return errors.New("cnat renderer: Deps.IPNet is required")
	}
	rndr.ifs = renderer.NewInterfaces()
	rndr.infraIfs = renderer.NewInterfaces()
	rndr.rendered = make(map[renderer.ServiceID]*renderedService)
	rndr.ownership.reset(0)
	rndr.frontendIfs, rndr.backendIfs = renderer.NewInterfaces(), renderer.NewInterfaces()
	rndr.routes = make(map[string]l3.Route_RouteType)
	return nil
}

// serves tells whether the renderer renders addresses of a's family.
func (rndr *Renderer) serves(a renderer.Address) bool {
	return rndr.IPv4 || !a.IsIPv4()
}

// families returns the families served, IPv4 first.
func (rndr *Renderer) families() []ipam.Family {
	if rndr.IPv4 {
		return []ipam.Family{ipam.IPv4, ipam.IPv6}
	}
	return []ipam.Family{ipam.IPv6}
}

// AddFlatService stages the translation set of a new service.
func (rndr *Renderer) AddFlatService(txn renderer.UpdateTxn, service *renderer.FlatService) error {
	txn.Describe(fmt.Sprintf("add cnat service '%s'", service.ID))
	rndr.update(txn, nil, service)
	return nil
}

// UpdateFlatService stages the new translation set of a changed service (nothing
// when its translations are unchanged).
func (rndr *Renderer) UpdateFlatService(txn renderer.UpdateTxn, oldService, newService *renderer.FlatService) error {
	txn.Describe(fmt.Sprintf("update cnat service '%s'", newService.ID))
	rndr.update(txn, oldService, newService)
	return nil
}

// DeleteFlatService stages the removal of the service's translation set and routes.
func (rndr *Renderer) DeleteFlatService(txn renderer.UpdateTxn, service *renderer.FlatService) error {
	txn.Describe(fmt.Sprintf("delete cnat service '%s'", service.ID))
	rndr.update(txn, service, nil)
	return nil
}

// update stages the change of one service from oldSvc to newSvc (either nil). A
// service whose ID changed has its old set's deletion staged before the new set: the
// scheduler applies a transaction in staging order, and VPP knows a translation by
// its VIP, port and protocol only, so the old set's deletion run after the new set's
// creation would delete the translations the two have in common.
func (rndr *Renderer) update(txn renderer.UpdateTxn, oldSvc, newSvc *renderer.FlatService) {
	var touched []string
	if oldSvc != nil && (newSvc == nil || oldSvc.ID != newSvc.ID) {
		touched = rndr.dropService(txn, oldSvc.ID)
	}
	if newSvc != nil {
		touched = append(touched, rndr.stageService(txn, newSvc)...)
	}
	rndr.stageRoutes(txn, touched)
}

// UpdateFlatNodePortServices keeps the new node IPs and stages, for every node-port
// service, a new set: the translations it had, less those of the node IPs that went,
// plus those of the node IPs that appeared (the others are the same messages): the
// cost of the changed translations and of one new list per service. A service
// exposed on an external IP that became or stopped being a node's (is_real_ip, no
// route) is rendered anew.
func (rndr *Renderer) UpdateFlatNodePortServices(txn renderer.UpdateTxn, nodeIPs *renderer.IPAddresses, npServices []*renderer.FlatService) error {
	before := make(map[renderer.Address]bool, len(rndr.nodeAddrs))
	for _, a := range rndr.nodeAddrs {
		before[a] = true
	}
	rndr.setNodeIPs(nodeIPs)
	var added, removed []renderer.Address
	for _, a := range rndr.nodeAddrs {
		if !before[a] {
			added = append(added, a)
		}
		delete(before, a)
	}
	for a := range before {
		removed = append(removed, a)
	}
	if len(added) == 0 && len(removed) == 0 {
		return nil
	}
	txn.Describe("update cnat node-port services")
	changed := append(slices.Clone(added), removed...)
	gone := make(map[string]bool, len(removed))
	for _, a := range removed {
		gone[a.Text] = true
	}
	// The edits are planned in shares (a large change on several goroutines), then
	// applied in the services' order: the ownership is decided as one at a time does.
	edits := make([]nodePortEdit, len(npServices))
	var planned []int
	for i, svc := range npServices {
		r := rndr.rendered[svc.ID]
		edits[i] = nodePortEdit{svc: svc, r: r,
			renderAnew: r == nil || slices.ContainsFunc(svc.ExternalIPs, func(a renderer.Address) bool { return slices.Contains(changed, a) })}
		if !edits[i].renderAnew {
			planned = append(planned, i)
		}
	}
	shares.Run(len(planned), parallelEditMin, func(_, lo, hi int) {
		sl := &slabs{on: true}
		for _, i := range planned[lo:hi] {
			rndr.planNodePorts(&edits[i], added, gone, sl)
		}
	})
	sl := &slabs{on: true}
	for i := range edits {
		e := &edits[i]
		if e.renderAnew {
			rndr.update(txn, e.svc, e.svc)
			continue
		}
		rndr.stageRoutes(txn, rndr.applyNodePorts(txn, e, sl))
	}
	// A node's IP has no route; one that stopped being a node's gets the route its
	// users want.
	nodeChanged := make([]string, len(changed))
	for i, a := range changed {
		nodeChanged[i] = a.Text
	}
	rndr.stageRoutes(txn, nodeChanged)
	return nil
}

// setNodeIPs keeps the node IPs of the families served, in the order of their texts
// (the order of sets), a new generation when they changed.
func (rndr *Renderer) setNodeIPs(nodeIPs *renderer.IPAddresses) {
	var addrs []renderer.Address
	for _, ip := range nodeIPs.List() {
		if a := renderer.NewAddress(ip); rndr.serves(a) {
			addrs = append(addrs, a)
		}
	}
	slices.SortFunc(addrs, func(a, b renderer.Address) int { return strings.Compare(a.Text, b.Text) })
	if !slices.Equal(addrs, rndr.nodeAddrs) {
		rndr.nodeAddrs = addrs
		rndr.nodeAddrSet = make(map[string]bool, len(addrs))
		for _, a := range addrs {
			rndr.nodeAddrSet[a.Text] = true
		}
		rndr.nodeGen++
	}
}

// isNodeAddr tells whether the address is one of the nodes' IPs.
func (rndr *Renderer) isNodeAddr(a renderer.Address) bool {
	return rndr.nodeAddrSet[a.Text] || a.Text == rndr.nodeIP4 || a.Text == rndr.nodeIP6
}

// UpdateFrontendIfs stages the cnat-snat feature and the SNAT policy tables of the
// interfaces that became or stopped being frontends.
func (rndr *Renderer) UpdateFrontendIfs(txn renderer.UpdateTxn, oldIfNames, newIfNames renderer.Interfaces) error {
	rndr.frontendIfs = newIfNames.Copy()
	rndr.updateIfs(txn, "update cnat frontend interfaces")
	return nil
}

// UpdateBackendIfs stages the cnat-snat feature and the SNAT policy tables of the
// interfaces that became or stopped being backends.
func (rndr *Renderer) UpdateBackendIfs(txn renderer.UpdateTxn, oldIfNames, newIfNames renderer.Interfaces) error {
	rndr.backendIfs = newIfNames.Copy()
	rndr.updateIfs(txn, "update cnat backend interfaces")
	return nil
}

// ResyncFlat stages the complete cnat configuration of the snapshot into txn; what it
// does not stage (the other renderer's values included) the resync removes.
func (rndr *Renderer) ResyncFlat(txn controller.ResyncOperations, resyncEv *renderer.FlatResyncEventData) error {
	if resyncEv == nil {
		resyncEv = &renderer.FlatResyncEventData{NodeIPs: renderer.NewIPAddresses(), FrontendIfs: renderer.NewInterfaces(),
			BackendIfs: renderer.NewInterfaces()}
	}
	rndr.learnNode()
	rndr.setNodeIPs(resyncEv.NodeIPs)
	rndr.routeUsers.Reset()
	rndr.routes = make(map[string]l3.Route_RouteType)
	addrs := rndr.resyncServices(txn, resyncEv.Services)
	rndr.stageRoutes(txn, addrs)
	rndr.resyncSNAT(txn)
	rndr.frontendIfs, rndr.backendIfs = resyncEv.FrontendIfs.Copy(), resyncEv.BackendIfs.Copy()
	rndr.ifs = unionOf(rndr.frontendIfs, rndr.backendIfs)
	for _, name := range rndr.ifs.Sorted() {
		for key, value := range rndr.ifValues(name) {
			txn.Put(key, value)
		}
	}
	rndr.Log.WithFields(logrus.Fields{
		"services": len(resyncEv.Services), "translations": rndr.ownership.staged(), "ipv4": rndr.IPv4,
	}).Info("cnat configuration resynced")
	return nil
}

// parallelRenderMin is the smallest share of a resync's services that a goroutine of
// its own renders (shares.Run): smaller resyncs render on the calling goroutine.
const parallelRenderMin = 1000

// learnNode reads what the rendering needs to know about this node.
func (rndr *Renderer) learnNode() {
	routing := rndr.ContivConf.GetRoutingConfig()
	rndr.mainVRF, rndr.podVRF = routing.MainVRFID, routing.PodVRFID
	rndr.nodeIP4, rndr.nodeIP6 = "", ""
	if ip, _ := rndr.IPNet.GetNodeIP(); ip != nil {
		if ip.To4() != nil {
			rndr.nodeIP4 = ip.To4().String()
		} else {
			rndr.nodeIP6 = ip.String()
		}
	}
	if fa := rndr.IPAM.ThisNodeAddresses(ipam.IPv6); fa != nil && fa.NodeIP != nil {
		rndr.nodeIP6 = fa.NodeIP.String()
	}
	rndr.learnSNAT()
	rndr.hostIf = rndr.IPNet.GetHostInterconnectIfName()
	rndr.infraIfs = renderer.NewInterfaces()
	for _, name := range []string{rndr.hostIf, rndr.IPNet.GetVxlanBVIIfName(), rndr.ContivConf.GetMainInterfaceName()} {
		if name != "" {
			rndr.infraIfs.Add(name)
		}
	}
	for _, other := range rndr.ContivConf.GetOtherVPPInterfaces() {
		if other.InterfaceName != "" {
			rndr.infraIfs.Add(other.InterfaceName)
		}
	}
}

// unionOf returns the names in either set.
func unionOf(a, b renderer.Interfaces) renderer.Interfaces {
	u := a.Copy()
	for name := range b {
		u.Add(name)
	}
	return u
}
