package cnatplugin

import (
	"fmt"

	govppapi "go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/cnat"

	cnatmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/cnat"
	"github.com/contiv-vpp/contiv-vpp/plugins/govppmux"
)

// The asynchronous Create, Update and Delete of translations (CreateAsync,
// UpdateAsync, DeleteAsync): the scheduler starts every translation of a transaction
// before it waits for the first, so a burst of Services, a node joining (every
// NodePort's paths change) or leaving (the NodePorts of its address go) reaches VPP
// as one pipeline of cnat_translation_update and cnat_translation_del, not one round
// trip each. The synchronous forms are the asynchronous ones waited for at once.
//
// All of them share one pipe and one queue of requests in flight, so VPP executes
// them in the order the scheduler started them (VPP handles a client's messages in
// order): a delete that frees an id before a create that may reuse it stays before it.

// inFlight is one request sent on the pipe, its reply not read yet.
type inFlight struct {
	what  string           // the operation, for errors
	msg   string           // the request's name, for errors
	reply govppapi.Message // filled in by receiveOldest
	err   error
	done  bool
}

// send sends req now (reading the oldest reply first when the window is full) and
// returns its entry, already done with the error if it could not be sent.
func (d *translationDescriptor) send(what string, req, reply govppapi.Message) *inFlight {
	if d.pipe == nil {
		d.pipe = govppmux.NewPipe(d.Ch)
	}
	if len(d.inflight) >= d.pipe.Window() {
		d.receiveOldest()
	}
	f := &inFlight{what: what, msg: req.GetMessageName(), reply: reply}
	if err := d.pipe.Send(req); err != nil {
		f.err, f.done = fmt.Errorf("%s: %s: %w", what, f.msg, err), true
	} else {
		d.inflight = append(d.inflight, f)
	}
	return f
}

// await reads replies until the one of f is in and returns its error.
func (d *translationDescriptor) await(f *inFlight) error {
	for !f.done {
		d.receiveOldest()
	}
	return f.err
}

// drain reads every reply in flight (each stays in its entry), so that the channel
// may be used for something else, e.g. a dump.
func (d *translationDescriptor) drain() {
	for len(d.inflight) > 0 {
		d.receiveOldest()
	}
}

// receiveOldest reads the reply of the oldest request in flight (VPP answers in
// order).
func (d *translationDescriptor) receiveOldest() {
	f := d.inflight[0]
	d.inflight[0] = nil
	d.inflight = d.inflight[1:]
	if err := d.pipe.Receive(f.reply); err != nil {
		f.err = fmt.Errorf("%s: %s: %w", f.what, f.msg, err)
	}
	f.done = true
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
	reply := &cnat.CnatTranslationUpdateReply{}
	f := d.send(what, &cnat.CnatTranslationUpdate{Translation: t}, reply)
	return func() (*TranslationMetadata, error) {
		if err := d.await(f); err != nil {
			return nil, err
		}
		d.Log.WithField("id", reply.ID).Debugf("%s done", what)
		return &TranslationMetadata{ID: reply.ID}, nil
	}
}

// deleteAsync sends cnat_translation_del with the id in the metadata now and returns
// the function that waits for its reply (the scheduler's goroutine only). Without
// metadata (never expected: Create and Retrieve give it) it finds the id in a dump
// first, after reading the replies in flight (a dump needs the channel to itself).
func (d *translationDescriptor) deleteAsync(key string, v *cnatmodel.Translation, md *TranslationMetadata) func() error {
	what := "delete cnat translation " + cnatmodel.FormatTranslation(v)
	if md == nil {
		d.drain()
		found, err := d.findID(key)
		if err != nil {
			err = fmt.Errorf("%s: %w", what, err)
			return func() error { return err }
		}
		md = found
	}
	id := md.ID
	f := d.send(fmt.Sprintf("%s (id %d)", what, id), &cnat.CnatTranslationDel{ID: id}, &cnat.CnatTranslationDelReply{})
	return func() error {
		if err := d.await(f); err != nil {
			return err
		}
		d.Log.WithField("id", id).Debugf("%s done", what)
		return nil
	}
}
