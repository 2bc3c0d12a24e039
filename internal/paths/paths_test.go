package paths

import (
	"runtime"
	"strings"
	"testing"
)

func TestLayouts(t *testing.T) {
	env := func(system bool, vars map[string]string) Env {
		return Env{System: system, Home: "/home/ada", UID: 501, TempDir: "/tmp", Getenv: func(k string) string { return vars[k] }}
	}
	cases := []struct {
		name string
		got  Layout
		want Layout
	}{
		{"darwin system", Darwin(env(true, nil)), Layout{
			Socket: "/var/run/forged/forged.sock",
			Config: "/Library/Application Support/forged/config.json",
			Data:   "/Library/Application Support/forged/data",
			Logs:   "/Library/Logs/forged",
		}},
		{"darwin user", Darwin(env(false, map[string]string{"XDG_RUNTIME_DIR": "/run/user/501"})), Layout{
			Socket: "/home/ada/Library/Application Support/forged/forged.sock",
			Config: "/home/ada/Library/Application Support/forged/config.json",
			Data:   "/home/ada/Library/Application Support/forged/data",
			Logs:   "/home/ada/Library/Logs/forged",
		}},
		{"linux system", Linux(env(true, map[string]string{"XDG_CONFIG_HOME": "/ignored"})), Layout{
			Socket: "/var/run/forged/forged.sock",
			Config: "/etc/forged/config.json",
			Data:   "/var/lib/forged",
		}},
		{"linux user", Linux(env(false, nil)), Layout{
			Socket: "/tmp/forged-501/forged.sock",
			Config: "/home/ada/.config/forged/config.json",
			Data:   "/home/ada/.local/share/forged",
		}},
		{"linux user, XDG", Linux(env(false, map[string]string{"XDG_RUNTIME_DIR": "/run/user/501", "XDG_CONFIG_HOME": "/c", "XDG_DATA_HOME": "/d"})), Layout{
			Socket: "/run/user/501/forged/forged.sock",
			Config: "/c/forged/config.json",
			Data:   "/d/forged",
		}},
		{"linux user, no home", Linux(Env{UID: 7, TempDir: "/tmp"}), Layout{
			Socket: "/tmp/forged-7/forged.sock",
			Config: "/tmp/forged-7/config/config.json",
			Data:   "/tmp/forged-7/data",
		}},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, c.got, c.want)
		}
	}
}

// TestOneSpelling: every default path names forged, never Forge or forge.
func TestOneSpelling(t *testing.T) {
	for _, system := range []bool{false, true} {
		e := Env{System: system, Home: "/h", UID: 1, TempDir: "/tmp"}
		for _, l := range []Layout{Darwin(e), Linux(e), Default()} {
			for _, p := range []string{l.Socket, l.Config, l.Data, l.Logs} {
				if p == "" {
					continue
				}
				if !strings.Contains(p, "/forged") || strings.Contains(strings.ToLower(strings.ReplaceAll(p, "forged", "")), "forge") {
					t.Errorf("%q does not spell the directory forged", p)
				}
			}
		}
	}
}

func TestDefaultIsThePlatformLayout(t *testing.T) {
	want := Linux(Current())
	if runtime.GOOS == "darwin" {
		want = Darwin(Current())
	}
	if Default() != want {
		t.Errorf("Default() = %+v, want %+v", Default(), want)
	}
}

// Apps look for forged at $FORGE_SOCKET alone, else the user's daemon
// then the system's; root only at the system's.
func TestSocketLookup(t *testing.T) {
	env := func(system bool, vars map[string]string) Env {
		return Env{System: system, Home: "/home/ada", UID: 501, TempDir: "/tmp", Getenv: func(k string) string { return vars[k] }}
	}
	user := platform(env(false, nil)).Socket
	for _, c := range []struct {
		name string
		env  Env
		want []string
	}{
		{"user", env(false, nil), []string{user, SystemSocket}},
		{"root", env(true, nil), []string{SystemSocket}},
		{"FORGE_SOCKET", env(false, map[string]string{"FORGE_SOCKET": "/x/s.sock"}), []string{"/x/s.sock"}},
		{"FORGE_SOCKET as root", env(true, map[string]string{"FORGE_SOCKET": "/x/s.sock"}), []string{"/x/s.sock"}},
	} {
		got := SocketLookup(c.env)
		if strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	if user == SystemSocket {
		t.Fatalf("the user's socket is the system's: %s", user)
	}
}
