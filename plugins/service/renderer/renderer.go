package renderer

import (
	"google.golang.org/protobuf/proto"

	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
)

// Renderer is the one interface the service processor renders through: its southbound.
// A renderer turns services in flat form (FlatService) into the configuration of one
// network stack and stages it into the transaction passed with each call, the one of
// the event being handled; it keeps no transaction between calls. The processor calls
// it from the controller's event loop only, so implementations need no locking for
// these calls.
//
// Several renderers may be added to the processor; each receives the same calls, with
// the same values, in the order they were added. A renderer that serves one address
// family only skips the addresses of the other (Address.IsIPv4): the NAT44 renderer
// ignores IPv6 addresses, a renderer of IPv6 services would ignore IPv4 ones.
//
// The call contract is the one of ServiceRendererAPI, method by method: ResyncFlat
// first and whenever the whole state must be rendered again, the service operations
// for the life of one service (UpdateFlatService only when the rendering changed),
// UpdateFlatNodePortServices when the node IPs changed, UpdateFrontendIfs and
// UpdateBackendIfs when an interface set changed. The FlatServices and interface sets
// passed, and everything they reference, are never modified by the processor
// afterwards: a renderer may keep them and compare FlatService pointers (the same
// *FlatService is passed again, by a later resync, while the service did not change).
//
// A renderer of the seed API (ServiceRendererAPI) becomes a Renderer through a
// SeedAdapter.
type Renderer interface {
	// AddFlatService renders a service that was not rendered before.
	AddFlatService(txn UpdateTxn, service *FlatService) error
	// UpdateFlatService re-renders a service whose configuration or backends changed.
	UpdateFlatService(txn UpdateTxn, oldService, newService *FlatService) error
	// DeleteFlatService removes everything rendered for the service.
	DeleteFlatService(txn UpdateTxn, service *FlatService) error
	// UpdateFlatNodePortServices gives the new set of node IPs of the cluster together
	// with every service exposed on node ports.
	UpdateFlatNodePortServices(txn UpdateTxn, nodeIPs *IPAddresses, npServices []*FlatService) error
	// UpdateFrontendIfs gives the new set of interfaces connecting clients to VPP (VPP
	// specific; other renderers may ignore it).
	UpdateFrontendIfs(txn UpdateTxn, oldIfNames, newIfNames Interfaces) error
	// UpdateBackendIfs gives the new set of interfaces connecting service backends to
	// VPP (VPP specific; other renderers may ignore it).
	UpdateBackendIfs(txn UpdateTxn, oldIfNames, newIfNames Interfaces) error
	// ResyncFlat hands over the complete state; the renderer stages the rendering of
	// this snapshot, all of it, into txn (what it does not stage is removed by the
	// resync).
	ResyncFlat(txn controller.ResyncOperations, resyncEv *FlatResyncEventData) error
}

// UpdateTxn is the transaction of an update event as a renderer stages into it: the
// controller's operations, plus Describe to say what was changed, for the event
// history ("add service 'default/nginx'"). A renderer describes each change it stages.
type UpdateTxn interface {
	controller.UpdateOperations
	// Describe records the description of a change staged (or about to be staged)
	// into the transaction.
	Describe(change string)
}

// DiscardTxn is a transaction that drops everything staged into it and every
// description: what renderers stage while the processor reverts an event (whose
// transaction is not committed), or when they are called without a transaction.
type DiscardTxn struct{}

var _ UpdateTxn = DiscardTxn{}

// Put drops the value.
func (DiscardTxn) Put(string, proto.Message) {}

// Get finds nothing.
func (DiscardTxn) Get(string) proto.Message { return nil }

// Delete drops the deletion.
func (DiscardTxn) Delete(string) {}

// Describe drops the description.
func (DiscardTxn) Describe(string) {}
