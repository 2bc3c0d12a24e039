package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/client"
	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon"
	"github.com/forgedaemon/forged/daemon/fakeengine"

	"github.com/forgedaemon/forged/internal/otheruid"
)

// TestSecondUIDAsOnMsgpack: a process of another uid (65534) is allowed or
// refused on the HTTP socket exactly as on the msgpack socket, per
// allowed_users; the kernel, not anything the caller sends, says who it is.
func TestSecondUIDAsOnMsgpack(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to start a process as another uid")
	}
	for _, tc := range []struct {
		allowed []uint32
		want    string
	}{{nil, "allowed"}, {[]uint32{4242}, "refused"}, {[]uint32{65534}, "allowed"}} {
		h := start(t, fakeengine.New(fakeengine.Options{StopAfter: 3}), daemon.Config{AllowedUIDs: tc.allowed})
		out := otheruid.Output(t, "TestSecondUIDChild", "FORGED_TEST_UID_SOCKETS="+h.sock+","+h.httpSock)
		want := fmt.Sprintf("VERDICT msgpack=%s http=%s", tc.want, tc.want)
		if !strings.Contains(out, want) {
			t.Errorf("allowed_users %v: want %q, child said:\n%s", tc.allowed, want, out)
		}
	}
}

// TestSecondUIDChild is the other uid's half of TestSecondUIDAsOnMsgpack.
func TestSecondUIDChild(t *testing.T) {
	socks := os.Getenv("FORGED_TEST_UID_SOCKETS")
	if socks == "" {
		t.Skip("run by TestSecondUIDAsOnMsgpack")
	}
	if os.Getuid() != 65534 {
		t.Fatalf("running as uid %d, want 65534", os.Getuid())
	}
	msgSock, httpSock, _ := strings.Cut(socks, ",")
	cl, err := client.Dial(context.Background(), msgSock, client.Options{Name: "other"})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	msgpack := "allowed"
	var we *wire.Error
	if _, err := cl.Status(context.Background()); errors.As(err, &we) && we.Code == wire.CodeUnauthorized {
		msgpack = "refused"
	} else if err != nil {
		t.Fatal(err)
	}
	httpVerdict := "allowed"
	c := unixClient(httpSock)
	models := do(t, c, base, "GET", "/v1/models", nil)
	chat := do(t, c, base, "POST", "/v1/chat/completions", chatBody(nil))
	switch {
	case models.status == 403 && chat.status == 403:
		httpVerdict = "refused"
		if msg := chat.apiErr(t)["message"].(string); !strings.Contains(msg, "uid 65534") {
			t.Errorf("refusal %q does not name the uid", msg)
		}
	case models.status != 200 || chat.status != 200:
		t.Fatalf("models %d, chat %d: %s", models.status, chat.status, chat.body)
	}
	fmt.Printf("VERDICT msgpack=%s http=%s\n", msgpack, httpVerdict)
}
