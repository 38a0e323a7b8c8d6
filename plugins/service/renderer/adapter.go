package renderer

import (
	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
)

// SeedAdapter makes a renderer of the seed API (ServiceRendererAPI) a Renderer: it
// passes every call on in the seed form, each FlatService as a ContivService.
//
// The ContivServices: one is built per FlatService, the first time it is passed,
// and kept while the processor may pass that FlatService again, so the seed renderer
// sees the same *ContivService for an unchanged service (in UpdateService it gets
// back, as the old service, the very value it was given before). Only a seed renderer
// costs these conversions; a Renderer is handed the FlatServices as they are.
//
// The transaction: the seed API has no transaction parameter, a seed renderer gets
// its transaction through the factories of its own Deps (UpdateTxnFactory,
// ResyncTxnFactory in the seed NAT44 renderer). The adapter keeps the transaction it
// is given for the duration of each call and hands it out through its methods
// UpdateTxnFactory and ResyncTxnFactory, which have the signatures of those
// factories: wire the seed renderer's factories to them and it stages into the
// transaction of the event being handled, the change descriptions it gives
// UpdateTxnFactory going to UpdateTxn.Describe:
//
//	a := &renderer.SeedAdapter{}
//	r := &myrenderer.Renderer{Deps: myrenderer.Deps{
//		UpdateTxnFactory: a.UpdateTxnFactory, ResyncTxnFactory: a.ResyncTxnFactory}}
//	a.Renderer = r
//	processor.AddRenderer(a)
//
// Outside of a call (a seed renderer staging from a goroutine of its own, or a resync
// asking for the update transaction) the factories return a DiscardTxn: what is
// staged there is dropped, as it belongs to no event. A seed renderer whose
// factories are wired elsewhere (a test's own store) keeps staging there.
//
// The zero value is ready once Renderer is set. Like the Renderer methods, the adapter
// is used from the event loop only.
type SeedAdapter struct {
	// Renderer receives the calls in the seed form.
	Renderer ServiceRendererAPI

	update   UpdateTxn                       // the transaction of the update call in progress
	resync   controller.ResyncOperations     // the transaction of the resync in progress
	services map[*FlatService]*ContivService // the ContivService given for each FlatService
}

var _ Renderer = (*SeedAdapter)(nil)

// UpdateTxnFactory returns the transaction of the update call in progress after
// recording change as its description; outside of an update call, a DiscardTxn.
func (a *SeedAdapter) UpdateTxnFactory(change string) controller.UpdateOperations {
	if a.update == nil {
		return DiscardTxn{}
	}
	a.update.Describe(change)
	return a.update
}

// ResyncTxnFactory returns the transaction of the resync in progress; outside of a
// resync, a DiscardTxn.
func (a *SeedAdapter) ResyncTxnFactory() controller.ResyncOperations {
	if a.resync == nil {
		return DiscardTxn{}
	}
	return a.resync
}

// during runs one call of the seed renderer with txn as the update transaction.
func (a *SeedAdapter) during(txn UpdateTxn, call func() error) error {
	a.update = txn
	defer func() { a.update = nil }()
	return call()
}

// contiv returns the ContivService of fs, built on its first use and kept.
func (a *SeedAdapter) contiv(fs *FlatService) *ContivService {
	if fs == nil {
		return nil
	}
	if cs, ok := a.services[fs]; ok {
		return cs
	}
	if a.services == nil {
		a.services = make(map[*FlatService]*ContivService)
	}
	cs := fs.ContivService()
	a.services[fs] = cs
	return cs
}

// AddFlatService passes the service on to AddService.
func (a *SeedAdapter) AddFlatService(txn UpdateTxn, service *FlatService) error {
	cs := a.contiv(service)
	return a.during(txn, func() error { return a.Renderer.AddService(cs) })
}

// UpdateFlatService passes the change on to UpdateService, with the ContivService given
// before as the old service.
func (a *SeedAdapter) UpdateFlatService(txn UpdateTxn, oldService, newService *FlatService) error {
	oldCS := a.contiv(oldService)
	if oldService != newService {
		delete(a.services, oldService)
	}
	newCS := a.contiv(newService)
	return a.during(txn, func() error { return a.Renderer.UpdateService(oldCS, newCS) })
}

// DeleteFlatService passes the removal on to DeleteService and forgets the service.
func (a *SeedAdapter) DeleteFlatService(txn UpdateTxn, service *FlatService) error {
	cs := a.contiv(service)
	delete(a.services, service)
	return a.during(txn, func() error { return a.Renderer.DeleteService(cs) })
}

// UpdateFlatNodePortServices passes the node IPs and the node-port services on to
// UpdateNodePortServices.
func (a *SeedAdapter) UpdateFlatNodePortServices(txn UpdateTxn, nodeIPs *IPAddresses, npServices []*FlatService) error {
	list := make([]*ContivService, len(npServices))
	for i, fs := range npServices {
		list[i] = a.contiv(fs)
	}
	return a.during(txn, func() error { return a.Renderer.UpdateNodePortServices(nodeIPs, list) })
}

// UpdateFrontendIfs passes the change on to UpdateLocalFrontendIfs.
func (a *SeedAdapter) UpdateFrontendIfs(txn UpdateTxn, oldIfNames, newIfNames Interfaces) error {
	return a.during(txn, func() error { return a.Renderer.UpdateLocalFrontendIfs(oldIfNames, newIfNames) })
}

// UpdateBackendIfs passes the change on to UpdateLocalBackendIfs.
func (a *SeedAdapter) UpdateBackendIfs(txn UpdateTxn, oldIfNames, newIfNames Interfaces) error {
	return a.during(txn, func() error { return a.Renderer.UpdateLocalBackendIfs(oldIfNames, newIfNames) })
}

// ResyncFlat passes the snapshot on to Resync, with txn as the resync transaction. The
// ContivServices of the services not in the snapshot are forgotten.
func (a *SeedAdapter) ResyncFlat(txn controller.ResyncOperations, resyncEv *FlatResyncEventData) error {
	var ev *ResyncEventData
	if resyncEv != nil {
		kept := a.services
		a.services = make(map[*FlatService]*ContivService, len(resyncEv.Services))
		ev = &ResyncEventData{NodeIPs: resyncEv.NodeIPs, FrontendIfs: resyncEv.FrontendIfs, BackendIfs: resyncEv.BackendIfs,
			Services: make([]*ContivService, len(resyncEv.Services))}
		for i, fs := range resyncEv.Services {
			cs, ok := kept[fs]
			if !ok {
				cs = fs.ContivService()
			}
			a.services[fs] = cs
			ev.Services[i] = cs
		}
	} else {
		clear(a.services)
	}
	a.resync = txn
	defer func() { a.resync = nil }()
	return a.Renderer.Resync(ev)
}
