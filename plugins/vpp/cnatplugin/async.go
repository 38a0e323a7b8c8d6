package cnatplugin

import (
	"fmt"

	"go.fd.io/govpp/binapi/cnat"

	cnatmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/cnat"
	"github.com/contiv-vpp/contiv-vpp/plugins/govppmux"
)

// The asynchronous Create and Update of translations (CreateAsync, UpdateAsync):
// the scheduler starts every translation of a transaction before it waits for the
// first, so a burst of Services or a node joining (every NodePort's paths change)
// goes to VPP as one pipeline of cnat_translation_update, not one round trip each.

// updateInFlight is one cnat_translation_update sent, its reply not read yet.
type updateInFlight struct {
	what  string
	reply cnat.CnatTranslationUpdateReply
	err   error
	done  bool
}

// updateAsync sends the update of v now and returns the function that waits for
// its reply (the scheduler's goroutine only).
func (d *translationDescriptor) updateAsync(v *cnatmodel.Translation, op string) func() (*TranslationMetadata, error) {
	what := op + " cnat translation " + cnatmodel.FormatTranslation(v)
	t, err := translationToAPI(v, d.SwIfIndex)
	if err != nil {
		err = fmt.Errorf("%s: %w", op, err)
		return func() (*TranslationMetadata, error) { return nil, err }
	}
	if d.pipe == nil {
		d.pipe = govppmux.NewPipe(d.Ch)
	}
	if len(d.inflight) >= d.pipe.Window() {
		d.receiveOldest()
	}
	u := &updateInFlight{what: what}
	if err := d.pipe.Send(&cnat.CnatTranslationUpdate{Translation: t}); err != nil {
		u.err, u.done = fmt.Errorf("%s: %w", what, err), true
	} else {
		d.inflight = append(d.inflight, u)
	}
	return func() (*TranslationMetadata, error) {
		for !u.done {
			d.receiveOldest()
		}
		if u.err != nil {
			return nil, u.err
		}
		d.Log.WithField("id", u.reply.ID).Debugf("%s done", what)
		return &TranslationMetadata{ID: u.reply.ID}, nil
	}
}

// receiveOldest reads the reply of the oldest update in flight (VPP answers in
// order).
func (d *translationDescriptor) receiveOldest() {
	u := d.inflight[0]
	d.inflight[0] = nil
	d.inflight = d.inflight[1:]
	if err := d.pipe.Receive(&u.reply); err != nil {
		u.err = fmt.Errorf("%s: cnat_translation_update: %w", u.what, err)
	}
	u.done = true
}
