package stn

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/utils/clock"
)

// NIC is the Linux side of the stolen NIC as the Keeper uses it; Host bound to a link
// name (HostNIC) is the real one.
type NIC interface {
	// Capture records the NIC's configuration.
	Capture() (*Record, error)
	// Steal takes the recorded configuration off the NIC.
	Steal(*Record) error
	// Restore gives it back.
	Restore(*Record) error
}

// HostNIC is the NIC named Link in Host's namespace.
type HostNIC struct {
	Host Host
	Link string
}

// Capture records the link's configuration.
func (n HostNIC) Capture() (*Record, error) { return n.Host.Capture(n.Link) }

// Steal takes the recorded configuration off the link.
func (n HostNIC) Steal(r *Record) error { return n.Host.Steal(r) }

// Restore gives the link its recorded configuration back.
func (n HostNIC) Restore(r *Record) error { return n.Host.Restore(r) }

// Probe tells whether VPP is up; a nil error means up.
type Probe func(ctx context.Context) error

// SocketProbe is the probe of VPP's binary API socket at path: VPP is up while a
// connection to it is accepted (after a crash the file stays, but connecting is
// refused).
func SocketProbe(path string, timeout time.Duration) Probe {
	return func(ctx context.Context) error {
		d := net.Dialer{Timeout: timeout}
		c, err := d.DialContext(ctx, "unix", path)
		if err != nil {
			return err
		}
		return c.Close()
	}
}

// Keeper is the watchdog of single-NIC mode: it steals the NIC while VPP is up and
// gives it back when VPP is down (package doc). Its state is the record file: the NIC
// is stolen exactly while the file exists.
type Keeper struct {
	// NIC is the NIC to steal.
	NIC NIC
	// StateFile is where the record is kept while the NIC is stolen.
	StateFile string
	// Probe tells whether VPP is up.
	Probe Probe
	// Interval is the time between probes (default 200ms).
	Interval time.Duration
	// DownAfter is the number of failed probes in a row that mean VPP is down
	// (default 2: one refused connect may be a restart of the listener).
	DownAfter int
	// Clock drives the probes (default the real clock).
	Clock clock.WithTicker
	// Log receives one line per decision (default logrus' standard logger).
	Log logrus.FieldLogger
	// OnChange, if set, is called after each take (stolen true) or give-back (false),
	// with the error, if any; tests and metrics use it.
	OnChange func(stolen bool, err error)

	rec   *Record
	fails int
	// resumed is set when the record was loaded at start: the first probe that finds
	// VPP up steals again (a crash may have come between Save and Steal, or the NIC
	// got its configuration back by other means, e.g. a recreated namespace).
	resumed bool
}

// Run probes VPP until ctx ends. At start it reads the record file: a record means a
// previous run stole the NIC; if VPP is not up the NIC is given back at the first
// probe. When ctx ends, VPP is probed once more: if it is down the NIC is given back
// before Run returns (a node shutting down stops VPP, then this daemon); if it is up
// the NIC stays stolen, so that a stopped or crashed daemon never takes the host's
// address away from a running VPP.
func (k *Keeper) Run(ctx context.Context) error {
	if k.NIC == nil || k.Probe == nil || k.StateFile == "" {
		return errors.New("stn keeper: NIC, Probe and StateFile are required")
	}
	if k.Interval <= 0 {
		k.Interval = 200 * time.Millisecond
	}
	if k.DownAfter <= 0 {
		k.DownAfter = 2
	}
	if k.Clock == nil {
		k.Clock = clock.RealClock{}
	}
	if k.Log == nil {
		k.Log = logrus.StandardLogger()
	}
	rec, err := Load(k.StateFile)
	if err != nil {
		return fmt.Errorf("stn keeper: %w", err)
	}
	k.rec = rec
	if rec != nil {
		k.Log.WithField("link", rec.Link).Info("stn: a record of a stolen NIC exists")
		k.fails = k.DownAfter - 1 // one failed probe gives it back: nobody is watching since the crash
		k.resumed = true
	}
	t := k.Clock.NewTicker(k.Interval)
	defer t.Stop()
	for {
		k.Step(ctx)
		select {
		case <-ctx.Done():
			if k.rec != nil {
				k.fails = k.DownAfter - 1 // one last probe decides
				k.Step(context.WithoutCancel(ctx))
			}
			return nil
		case <-t.C():
		}
	}
}

// Stolen tells whether the Keeper holds the NIC (a record exists). Not safe to call
// concurrently with Run.
func (k *Keeper) Stolen() bool { return k.rec != nil }

// Step probes VPP once and takes or gives back the NIC as needed.
func (k *Keeper) Step(ctx context.Context) {
	pctx, cancel := context.WithTimeout(ctx, k.Interval)
	err := k.Probe(pctx)
	cancel()
	if ctx.Err() != nil {
		return
	}
	if err == nil {
		k.fails = 0
		switch {
		case k.rec == nil:
			k.take()
		case k.resumed:
			k.resumed = false
			err := k.NIC.Steal(k.rec)
			k.Log.WithField("link", k.rec.Link).WithError(err).Info("stn: VPP is up, NIC of the record stolen again")
			if k.OnChange != nil {
				k.OnChange(true, err)
			}
		}
		return
	}
	k.fails++
	k.resumed = false
	if k.rec != nil && k.fails >= k.DownAfter {
		k.giveBack(err)
	}
}

// take records the NIC, persists the record and steals the NIC, in that order.
func (k *Keeper) take() {
	rec, err := k.NIC.Capture()
	if err == nil {
		err = Save(k.StateFile, rec)
	}
	if err == nil {
		k.rec = rec
		err = k.NIC.Steal(rec)
	}
	log := k.Log.WithField("file", k.StateFile)
	if rec != nil {
		log = log.WithFields(logrus.Fields{"link": rec.Link, "addrs": len(rec.Addrs), "routes": len(rec.Routes)})
	}
	if err != nil {
		log.WithError(err).Error("stn: VPP is up, taking the NIC failed")
	} else {
		log.Info("stn: VPP is up, NIC taken")
	}
	if k.OnChange != nil {
		k.OnChange(true, err)
	}
}

// giveBack restores the NIC and then forgets the record. A failed restore keeps the
// record, so the next probe tries again.
func (k *Keeper) giveBack(cause error) {
	log := k.Log.WithFields(logrus.Fields{"link": k.rec.Link, "probe": cause.Error()})
	err := k.NIC.Restore(k.rec)
	if err == nil {
		err = Remove(k.StateFile)
	}
	if err != nil {
		log.WithError(err).Error("stn: VPP is down, giving the NIC back failed; will retry")
	} else {
		log.Info("stn: VPP is down, NIC given back to the host")
		k.rec = nil
	}
	if k.OnChange != nil {
		k.OnChange(false, err)
	}
}
