package cluster

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
)

// chromiumPath finds the headless browser (Debian's chromium, installed by .ci/run).
func chromiumPath() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// TestTheWebViewShowsTheClusterAndRunsATrace (issue #31 item 4): `contiv-netctl ui`
// serves a page that, in a real headless browser, shows the lab's nodes and their pods,
// with the counters of the pods that carried known traffic and the denies of the
// NetworkPolicy that dropped some (read from the agents' stats segment metrics), and
// runs a trace from its form whose verdict it shows. The test saves a screenshot of
// the page (docs/images/netctl-ui.png, shown by the README).
func TestTheWebViewShowsTheClusterAndRunsATrace(t *testing.T) {
	browser := chromiumPath()
	if browser == "" {
		t.Skip("cluster: the web view's test needs a headless Chromium (apt-get install chromium, as .ci/run does)")
	}
	l := sharedLab(t)
	requireForwarding(t, l)
	bin := netctlBinary(t)
	ns := testNamespace(t, l, "webview")
	nodes := l.Nodes()
	startPod(t, l, ns, echoPod("client", "client", nodes[0].Name))
	webAndGuarded(t, l, ns, nodes[1])

	url := startUI(t, bin, netctlArgs(t, l))
	ctx, cancel := chromedp.NewExecAllocator(testCtx(t, 3*time.Minute), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser), chromedp.NoSandbox, chromedp.WindowSize(1280, 1000))...)
	defer cancel()
	ctx, cancel = chromedp.NewContext(ctx)
	defer cancel()

	run := func(what string, a chromedp.Action[chromedp.Void]) {
		t.Helper()
		if _, err := chromedp.Run(ctx, a); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(sel))
		if err != nil {
			t.Fatalf("read %s: %v", sel, err)
		}
		return s
	}
	run("load the page "+url, chromedp.Navigate(url))
	run("wait for the pods", chromedp.WaitVisible(`tr.pod`))
	testkit.Eventually(t, 30*time.Second, "the page lists the pods", func() error {
		shown := text(`#nodes`)
		for _, want := range []string{ns + "/client", ns + "/web"} {
			if !strings.Contains(shown, want) {
				return &missingError{want}
			}
		}
		return nil
	})
	nodesText := text(`#nodes`)
	for _, n := range nodes {
		if !strings.Contains(nodesText, n.Name) {
			t.Errorf("issue #31 item 4: the page does not show node %s:\n%s", n.Name, nodesText)
		}
	}

	// the page polls every 5 s: the Service appears
	testkit.Eventually(t, 30*time.Second, "the page lists the Service", func() error {
		if s := text(`#services`); !strings.Contains(s, ns+"/web") {
			return &missingError{"Service " + ns + "/web in " + s}
		}
		return nil
	})
	// Known traffic: conns connections from the client to the Service's pod, each at
	// least three packets each way (as in TestDataPlaneMetricsAfterKnownTraffic), on
	// top of webAndGuarded's probes, which include connections the policy
	// deny-guarded dropped. The agents read their VPP's stats segment, so the page
	// shows the pods' counters (not "-") and the policy's denies.
	const conns, perConn = 5, 3
	d := podDialer(t, l, ns, "client")
	web := serviceAddr(t, l, ns, "web")
	for range conns {
		if err := answeredBy(d, web, "web"); err != nil {
			t.Fatal(err)
		}
	}
	podRows := func() (map[string][]string, error) {
		rows, err := chromedp.Run(ctx, chromedp.Evaluate[[][]string](
			`Array.from(document.querySelectorAll("tr.pod"), (tr) => Array.from(tr.cells, (td) => td.textContent))`))
		if err != nil {
			return nil, err
		}
		out := map[string][]string{}
		for _, r := range rows {
			if len(r) == 5 {
				out[r[0]] = r
			}
		}
		return out, nil
	}
	testkit.Eventually(t, 30*time.Second, "the page shows the pods' rx/tx counters", func() error {
		rows, err := podRows()
		if err != nil {
			return err
		}
		for _, pod := range []string{ns + "/client", ns + "/web"} {
			r := rows[pod]
			if r == nil {
				return &missingError{"pod row " + pod}
			}
			for i, what := range map[int]string{2: "rx", 3: "tx"} {
				if v, err := strconv.ParseFloat(r[i], 64); err != nil || v < conns*perConn {
					return &missingError{fmt.Sprintf("%s %s >= %d (shown %q)", pod, what, conns*perConn, r[i])}
				}
			}
		}
		return nil
	})
	testkit.Eventually(t, 30*time.Second, "the page shows the policy's denies", func() error {
		rows, err := chromedp.Run(ctx, chromedp.Evaluate[[][]string](
			`Array.from(document.querySelectorAll("#denies tbody tr"), (tr) => Array.from(tr.cells, (td) => td.textContent))`))
		if err != nil {
			return err
		}
		for _, r := range rows {
			if len(r) == 4 && r[1] == ns+"/deny-guarded" {
				if v, err := strconv.ParseFloat(r[3], 64); err == nil && v >= 1 {
					return nil
				}
			}
		}
		return &missingError{fmt.Sprintf("a deny of %s/deny-guarded in %v", ns, rows)}
	})
	if e := text(`#errors`); e != "" {
		t.Logf("the page shows errors: %s", e)
	}

	run("type the source", chromedp.SendKeys(`#trace-src`, ns+"/client"))
	run("type the destination", chromedp.SendKeys(`#trace-dst`, "svc:"+ns+"/web"))
	run("run the trace", chromedp.Click(`#trace-run`))
	run("wait for the verdict", chromedp.WaitVisible(`#trace-verdict`))
	testkit.Eventually(t, 30*time.Second, "the trace's verdict", func() error {
		if v := text(`#trace-verdict`); !strings.Contains(v, "ALLOWED") || !strings.Contains(v, "Service "+ns+"/web") {
			return &missingError{"ALLOWED to " + ns + "/web in " + v}
		}
		return nil
	})

	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	root, err := testkit.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(root, "docs", "images", "netctl-ui.png")
	if err := os.WriteFile(out, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot of the web view: %s", out)
}

type missingError struct{ what string }

func (e *missingError) Error() string { return "not shown yet: " + e.what }

// startUI starts `contiv-netctl ui` on a free loopback port and returns its URL; it is
// stopped when the test ends.
func startUI(t *testing.T, bin string, global []string) string {
	t.Helper()
	cmd := exec.Command(bin, append(append([]string{}, global...), "ui", "--listen", "127.0.0.1:0")...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("contiv-netctl ui: %v", err)
	}
	_, url, ok := strings.Cut(strings.TrimSpace(line), ": ")
	if !ok {
		t.Fatalf("contiv-netctl ui printed %q, not its URL", line)
	}
	return url
}
