package cluster

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
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
// and runs a trace from its form whose verdict it shows. The test saves a screenshot of
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
	// The counters and denies come from the agents' contiv_dataplane_ metrics, which
	// need VPP's stats segment: the lab's vpp-sim serves none yet (no stats socket in
	// its govpp.conf), so they are logged, not asserted.
	t.Logf("denies shown: %q; errors shown: %q", text(`#denies`), text(`#errors`))

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
