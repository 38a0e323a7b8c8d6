package contivconf

import (
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
)

// The plugin is the first event handler of the controller: on every resync it resolves
// this node's settings again (the VPP interfaces may have changed, e.g. after a VPP
// restart) before the handlers that read them run.

// HandlesEvent selects every resync.
func (p *Plugin) HandlesEvent(ev api.Event) bool { return ev.Method().IsResync() }

// Resync resolves the node configuration again; a failure at the start-up resync is
// fatal, since no other plugin can work without it.
func (p *Plugin) Resync(_ api.Event, _ api.KubeStateData, resyncCount int, _ api.ResyncOperations) error {
	if err := p.ReloadNodeInterfaces(); err != nil {
		if resyncCount == 1 {
			return api.NewFatalError(err)
		}
		return err
	}
	return nil
}

// Update does nothing: the plugin handles no update event (the NodeConfig CRD is not
// supported yet).
func (p *Plugin) Update(api.Event, api.UpdateOperations) (string, error) { return "", nil }

// Revert does nothing: Update changes no state.
func (p *Plugin) Revert(api.Event) error { return nil }
