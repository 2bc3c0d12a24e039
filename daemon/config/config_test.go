package config

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestDefaultsAreValid(t *testing.T) {
	c := Default()
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
	if c.KeepAlive.D() != 10*time.Minute {
		t.Errorf("keep_alive default = %s, want 10m (issue 7)", c.KeepAlive)
	}
	if c.HTTP.IdleTimeout.D() != time.Minute {
		t.Errorf("http.idle_timeout default = %s, want 1m (docs/HTTP.md)", c.HTTP.IdleTimeout)
	}
	if c.Drafter != DrafterAuto || !c.Update.Auto || c.Memory.Reserve != 4<<30 {
		t.Errorf("unexpected defaults: %+v", c)
	}
}

func TestParseOverlaysDefaults(t *testing.T) {
	c, err := Parse([]byte(`{
		"repo": "me/bundle", "keep_alive": "30m", "allowed_users": ["alice", "501"],
		"update": {"interval": "2h", "jitter": "5m", "window": "23:30-05:00", "bandwidth_limit": "10MiB", "auto": false},
		"memory": {"reserve": "6GiB"}, "limits": {"per_caller": 2}, "context": {"max": 32768}, "drafter": "off",
		"download": {"min_rate": "64KiB", "rate_window": "30s"}, "http": {"idle_timeout": "5m"}
	}`))
	if err != nil {
		t.Fatal(err)
	}
	want := Default()
	want.Repo, want.KeepAlive, want.AllowedUsers = "me/bundle", Duration(30*time.Minute), []string{"alice", "501"}
	want.Update = Update{Interval: Duration(2 * time.Hour), Jitter: Duration(5 * time.Minute),
		Window: Window{Start: 23*60 + 30, End: 5 * 60, Set: true}, Bandwidth: 10 << 20}
	want.Memory.Reserve = 6 << 30
	want.Download = Download{MinRate: 64 << 10, RateWindow: Duration(30 * time.Second)}
	want.Limits.PerCaller = 2
	want.Context.Max = 32768
	want.Drafter = DrafterOff
	want.HTTP.IdleTimeout = Duration(5 * time.Minute)
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("got  %+v\nwant %+v", c, want)
	}
	if got := Changed(Default(), c); strings.Join(got, " ") != "allowed_users context.max download.min_rate download.rate_window drafter http.idle_timeout keep_alive limits.per_caller memory.reserve repo update.auto update.bandwidth_limit update.interval update.jitter update.window" {
		t.Errorf("Changed = %v", got)
	}
}

func TestMarshalRoundTrip(t *testing.T) {
	c, err := Parse([]byte(`{"update": {"window": "01:00-04:30", "bandwidth_limit": 1500000}, "memory": {"reserve": "1.5GB"}}`))
	if err != nil {
		t.Fatal(err)
	}
	data, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(data)
	if err != nil {
		t.Fatalf("re-parse of %s: %v", data, err)
	}
	if !reflect.DeepEqual(back, c) {
		t.Fatalf("round trip changed the config:\n%s\n%+v\n%+v", data, back, c)
	}
	if c.Memory.Reserve != 1_500_000_000 {
		t.Errorf("1.5GB = %d", c.Memory.Reserve)
	}
}

// Every malformed input is refused with the key and the rule in the message.
func TestParseErrorsNameTheKey(t *testing.T) {
	cases := []struct{ in, want string }{
		{``, "empty file"},
		{`[]`, "config: must be a JSON object"},
		{`null`, "config: must be a JSON object"},
		{`{} {}`, "trailing data"},
		{`{"colour": 1}`, "colour: unknown key"},
		{`{"update": {"intervall": "1h"}}`, "update.intervall: unknown key"},
		{`{"repo": "a/b", "repo": "c/d"}`, "repo: key given twice"},
		{`{"update": 5}`, "update: must be a JSON object"},
		{`{"update": {"interval": "5s"}}`, `update.interval: must be at least 1m, got "5s"`},
		{`{"update": {"interval": 60}}`, "update.interval: must be a duration string"},
		{`{"update": {"interval": "soon"}}`, `update.interval: must be a duration like "10m" or "6h", got "soon"`},
		{`{"update": {"jitter": "7h"}}`, "update.jitter: must be between 0 and update.interval"},
		{`{"update": {"window": "25:00-01:00"}}`, `update.window: must be "HH:MM-HH:MM"`},
		{`{"update": {"window": "01:00-01:00"}}`, `update.window: must be "HH:MM-HH:MM"`},
		{`{"update": {"bandwidth_limit": "10 parsecs"}}`, "update.bandwidth_limit: must be a size"},
		{`{"update": {"bandwidth_limit": "1KiB"}}`, "update.bandwidth_limit: must be 0 (unlimited) or at least 64KiB"},
		{`{"update": {"auto": "yes"}}`, "update.auto: must be true or false, got a JSON string"},
		{`{"memory": {"reserve": -1}}`, "memory.reserve: must be a size"},
		{`{"memory": {"reserve": "2TiB"}}`, "memory.reserve: must be at most 1TiB"},
		{`{"keep_alive": "-1m"}`, "keep_alive: must not be negative"},
		{`{"download": {"rate_window": "100ms"}}`, `download.rate_window: must be between 1s and 1h, got "100ms"`},
		{`{"download": {"min_rate": "2GiB"}}`, "download.min_rate: must be 0 (no rule) or a rate up to 1GiB per second"},
		{`{"download": {"min_rate": "fast"}}`, "download.min_rate: must be a size"},
		{`{"socket": "relative.sock"}`, "socket: must be an absolute path"},
		{`{"socket": "/` + strings.Repeat("x", 120) + `"}`, "socket: must be shorter than 104 bytes"},
		{`{"data_dir": ""}`, "data_dir: must be an absolute path"},
		{`{"repo": "noslash"}`, `repo: must be "owner/name"`},
		{`{"revision": ""}`, "revision: must not be empty"},
		{`{"admin_group": "wheel; rm"}`, "admin_group: must be a group name"},
		{`{"allowed_users": ["ok", "bad user"]}`, "allowed_users[1]: must be a user name"},
		{`{"allowed_users": "alice"}`, "allowed_users: must be a list of strings"},
		{`{"limits": {"max_frame": 10}}`, "limits.max_frame: must be between 4096"},
		{`{"limits": {"hello_timeout": "0s"}}`, `limits.hello_timeout: must be between "100ms" and "10m"`},
		{`{"limits": {"idle_timeout": "10ms"}}`, `limits.idle_timeout: must be at least "1s"`},
		{`{"limits": {"max_conns": 0}}`, "limits.max_conns: must be between 1 and 1048576"},
		{`{"limits": {"max_conns": 10, "conns_per_uid": 11}}`, "limits.conns_per_uid: must be between 1 and limits.max_conns (10), got 11"},
		{`{"limits": {"streams_per_conn": 0}}`, "limits.streams_per_conn: must be between 1 and 65536"},
		{`{"limits": {"per_caller": 0}}`, "limits.per_caller: must be at least 1"},
		{`{"limits": {"max_queue": 0}}`, "limits.max_queue: must be at least 1"},
		{`{"limits": {"slots": 1.5}}`, "limits.slots: must be an integer"},
		{`{"context": {"max": 5000}}`, "context.max: must be 0 (no cap) or a multiple of 1024"},
		{`{"drafter": "sometimes"}`, `drafter: must be "auto", "on" or "off", got "sometimes"`},
		{`{"backend": "gpu"}`, `backend: must be "auto", "coreai" or "ref", got "gpu"`},
		{`{"log_level": "loud"}`, "log_level: must be"},
		{`{"keep_alive": null}`, "keep_alive: null is not a value"},
		{`{"limits": {"slots": null}}`, "limits.slots: null is not a value"},
		{`{"update": null}`, "update: null is not a value"},
		{`{"http": {"socket": "rel.sock"}}`, `http.socket: must be "" (beside socket), "off" or an absolute path`},
		{`{"http": {"listen": "0.0.0.0:8080"}}`, "http.listen: \"0.0.0.0:8080\" is not a loopback address"},
		{`{"http": {"listen": "10.0.0.1:80"}}`, "http.listen: \"10.0.0.1:80\" is not a loopback address"},
		{`{"http": {"listen": "127.0.0.1"}}`, "http.listen: \"127.0.0.1\" is not host:port"},
		{`{"http": {"listen": "127.0.0.1:http"}}`, "http.listen: \"127.0.0.1:http\": the port must be a number"},
		{`{"http": {"idle_timeout": "500ms"}}`, `http.idle_timeout: must be between "1s" and "1h", got "500ms"`},
		{`{"http": {"idle_timeout": "2h"}}`, `http.idle_timeout: must be between "1s" and "1h", got "2h0m0s"`},
		{`{"http": {"idle_timeout": 60}}`, "http.idle_timeout: must be a duration string"},
	}
	for _, tc := range cases {
		_, err := Parse([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%.60s):\n got  %v\n want ...%s...", tc.in, err, tc.want)
		}
	}
}

// TestHTTPSocketPath: the HTTP API's socket is beside socket unless set or off.
func TestHTTPSocketPath(t *testing.T) {
	for in, want := range map[string]string{
		`{"socket": "/run/x/forged.sock"}`:                                    "/run/x/forged-http.sock",
		`{"socket": "/run/x/forged.sock", "http": {"socket": "/tmp/h.sock"}}`: "/tmp/h.sock",
		`{"http": {"socket": "off"}}`:                                         "",
	} {
		c, err := Parse([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		if got := c.HTTPSocketPath(); got != want {
			t.Errorf("%s: %q, want %q", in, got, want)
		}
	}
	for _, ok := range []string{`{"http": {"listen": "127.0.0.1:8080"}}`, `{"http": {"listen": "[::1]:8080"}}`, `{"http": {"listen": "localhost:1"}}`} {
		if _, err := Parse([]byte(ok)); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	_, err := Parse([]byte(`{"drafter": "x", "limits": {"slots": 0}}`))
	if err == nil || !strings.Contains(err.Error(), "drafter:") || !strings.Contains(err.Error(), "limits.slots:") {
		t.Fatalf("want both keys named, got %v", err)
	}
}

func TestWindowContains(t *testing.T) {
	night, _ := ParseWindow("23:00-05:00")
	day, _ := ParseWindow("09:15-17:00")
	at := func(h, m int) time.Time { return time.Date(2026, 1, 1, h, m, 0, 0, time.UTC) }
	for _, tc := range []struct {
		w    Window
		h, m int
		want bool
	}{
		{night, 23, 0, true}, {night, 2, 0, true}, {night, 5, 0, false}, {night, 12, 0, false}, {night, 22, 59, false},
		{day, 9, 14, false}, {day, 9, 15, true}, {day, 16, 59, true}, {day, 17, 0, false},
		{Window{}, 3, 3, true},
	} {
		if got := tc.w.Contains(at(tc.h, tc.m)); got != tc.want {
			t.Errorf("%q contains %02d:%02d = %v, want %v", tc.w, tc.h, tc.m, got, tc.want)
		}
	}
}

func TestByteSize(t *testing.T) {
	for in, want := range map[string]ByteSize{"0": 0, "1024": 1024, "4GiB": 4 << 30, "4 GB": 4e9, "512MiB": 512 << 20, "1.5KiB": 1536, "7B": 7} {
		got, err := ParseByteSize(in)
		if err != nil || got != want {
			t.Errorf("ParseByteSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "GiB", "-1", "1e30", "NaN", "4 gigs"} {
		if _, err := ParseByteSize(in); err == nil {
			t.Errorf("ParseByteSize(%q) accepted", in)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"update": {"interval": "1h", "window": "01:00-02:00", "bandwidth_limit": "1MiB"}}`))
	f.Add([]byte(`{"allowed_users": ["a"], "memory": {"reserve": 123456789}}`))
	f.Add([]byte(`{"repo": "a/b", "repo": "a/b"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err != nil {
			return
		}
		// Whatever parses must survive its own serialisation unchanged.
		out, err := c.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		back, err := Parse(out)
		if err != nil {
			t.Fatalf("re-parse of %s: %v", out, err)
		}
		if !reflect.DeepEqual(back, c) {
			t.Fatalf("round trip changed %s", out)
		}
	})
}
