package tracer

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"
)

// probePayload is what a UDP probe carries (an echo server sends it back).
const probePayload = "contiv-netctl trace\n"

// sendProbe sends one probe from the calling thread's network namespace (the caller
// has entered the pod's) and returns what the sender saw. The source address is
// the one the namespace's routes pick for the destination.
func sendProbe(ctx context.Context, r *ProbeRequest, wait time.Duration) (ProbeResult, error) {
	src, err := sourceFor(r.Dst)
	if err != nil {
		return ProbeResult{}, err
	}
	res := ProbeResult{Src: src}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	switch r.Proto {
	case ProtoTCP:
		err = probeTCP(ctx, r)
		if err == nil {
			res.Outcome = OutcomeConnected
		}
	case ProtoUDP:
		err = probeUDP(ctx, r)
		if err == nil {
			res.Outcome = OutcomeAnswered
		}
	case ProtoICMP:
		res.Outcome, err = probeICMP(ctx, src, r.Dst)
	}
	if err != nil {
		if res.Outcome == "" {
			res.Outcome = outcomeOf(err)
		}
		res.Detail = err.Error()
	}
	return res, nil
}

// sourceFor asks the namespace's routing which source it uses towards dst (a
// connected UDP socket sends nothing).
func sourceFor(dst string) (string, error) {
	c, err := net.Dial("udp4", net.JoinHostPort(dst, "9"))
	if err != nil {
		return "", fmt.Errorf("no route from here to %s: %w", dst, err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).IP.String(), nil
}

func probeTCP(ctx context.Context, r *ProbeRequest) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp4", net.JoinHostPort(r.Dst, strconv.Itoa(int(r.Port))))
	if err != nil {
		return err
	}
	return c.Close()
}

func probeUDP(ctx context.Context, r *ProbeRequest) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "udp4", net.JoinHostPort(r.Dst, strconv.Itoa(int(r.Port))))
	if err != nil {
		return err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	if _, err := c.Write([]byte(probePayload)); err != nil {
		return err
	}
	buf := make([]byte, 1500)
	_, err = c.Read(buf)
	return err
}

// probeICMP sends an echo request on a raw socket and waits for its reply or an
// ICMP error about it.
func probeICMP(ctx context.Context, src, dst string) (string, error) {
	c, err := icmp.ListenPacket("ip4:icmp", src)
	if err != nil {
		return "", fmt.Errorf("open an ICMP socket: %w", err)
	}
	defer c.Close()
	id := os.Getpid() & 0xffff
	msg := icmp.Message{Type: ipv4.ICMPTypeEcho, Body: &icmp.Echo{ID: id, Seq: 1, Data: []byte(probePayload)}}
	data, err := msg.Marshal(nil)
	if err != nil {
		return "", err
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	if _, err := c.WriteTo(data, &net.IPAddr{IP: net.ParseIP(dst)}); err != nil {
		return "", err
	}
	buf := make([]byte, 1500)
	for {
		n, from, err := c.ReadFrom(buf)
		if err != nil {
			return "", err
		}
		m, err := icmp.ParseMessage(1, buf[:n])
		if err != nil {
			continue
		}
		switch m.Type {
		case ipv4.ICMPTypeEchoReply:
			if e, ok := m.Body.(*icmp.Echo); ok && e.ID == id && from.String() == dst {
				return OutcomeAnswered, nil
			}
		case ipv4.ICMPTypeDestinationUnreachable:
			return OutcomeUnreachable, fmt.Errorf("ICMP destination unreachable (code %d) from %s", m.Code, from)
		}
	}
}

// outcomeOf names what a sender's error means.
func outcomeOf(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return OutcomeRefused
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EACCES):
		return OutcomeUnreachable
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return OutcomeNoAnswer
	}
	return OutcomeNoAnswer
}
