// Package config is forged's configuration file: its keys, their defaults,
// strict parsing (unknown keys and bad values are errors that name the key)
// and a Watcher that reloads the file when it changes.
//
// The file is JSON. Every key is optional; a missing key keeps its default.
// docs/CONFIG.md documents each key.
package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/forgedaemon/forged/internal/paths"
	"github.com/forgedaemon/forged/internal/strictjson"
)

// Config is the whole file. JSON names are the keys users write.
type Config struct {
	Socket       string   `json:"socket"`
	DataDir      string   `json:"data_dir"`
	Repo         string   `json:"repo"`
	Revision     string   `json:"revision"`
	Update       Update   `json:"update"`
	Download     Download `json:"download"`
	Memory       Memory   `json:"memory"`
	KeepAlive    Duration `json:"keep_alive"`
	AdminGroup   string   `json:"admin_group"`
	AllowedUsers []string `json:"allowed_users"`
	Limits       Limits   `json:"limits"`
	Context      Context  `json:"context"`
	Drafter      string   `json:"drafter"`
	Backend      string   `json:"backend"`
	LogLevel     string   `json:"log_level"`
	HTTP         HTTP     `json:"http"`
}

// HTTP places the OpenAI-compatible HTTP API (docs/HTTP.md).
type HTTP struct {
	// Socket is its Unix socket: "" beside socket (internal/paths
	// HTTPSocketFor), "off" for none, else an absolute path.
	Socket string `json:"socket"`
	// Listen is a loopback TCP address ("127.0.0.1:8080"); "" for none.
	Listen string `json:"listen"`
	// IdleTimeout closes a keep-alive connection with no request for
	// this long (both listeners).
	IdleTimeout Duration `json:"idle_timeout"`
}

// HTTPOff turns the HTTP API's Unix socket off (http.socket).
const HTTPOff = "off"

// HTTPSocketPath is where the HTTP API's Unix socket goes ("" for none).
func (c *Config) HTTPSocketPath() string { return HTTPSocket(c.HTTP.Socket, c.Socket) }

// HTTPSocket resolves an http.socket setting (or --http-socket) against the
// msgpack socket: "" is beside it, "off" is none (""), else the path given.
func HTTPSocket(setting, socket string) string {
	switch setting {
	case "":
		return paths.HTTPSocketFor(socket)
	case HTTPOff:
		return ""
	}
	return setting
}

// Update is the automatic update policy.
type Update struct {
	Auto      bool     `json:"auto"`
	Interval  Duration `json:"interval"`
	Jitter    Duration `json:"jitter"`
	Window    Window   `json:"window"`
	Bandwidth ByteSize `json:"bandwidth_limit"` // bytes per second; 0 = unlimited
}

// Download is the slow-drip rule of every download (bundle/hub): a request
// bringing less than MinRate bytes a second over a RateWindow fails.
type Download struct {
	MinRate    ByteSize `json:"min_rate"` // bytes per second; 0 = no rule
	RateWindow Duration `json:"rate_window"`
}

// Memory is the memory budget policy.
type Memory struct {
	Reserve ByteSize `json:"reserve"`
}

// Limits bound what callers can ask of the daemon.
type Limits struct {
	MaxFrame  int `json:"max_frame"`
	PerCaller int `json:"per_caller"`
	PerUID    int `json:"per_uid"`
	// SessionsPerConnection and SessionsPerUID cap open sessions.
	SessionsPerConnection int `json:"sessions_per_connection"`
	SessionsPerUID        int `json:"sessions_per_uid"`
	MaxQueue              int `json:"max_queue"`
	Slots                 int `json:"slots"`
	// Connections (docs/OPERATIONS.md, Limits): a first frame (hello)
	// deadline, an idle timeout for connections with no stream in flight,
	// caps on connections in total and per uid, and on one connection's
	// streams.
	HelloTimeout   Duration `json:"hello_timeout"`
	IdleTimeout    Duration `json:"idle_timeout"`
	MaxConns       int      `json:"max_conns"`
	ConnsPerUID    int      `json:"conns_per_uid"`
	StreamsPerConn int      `json:"streams_per_conn"`
}

// Context caps the context ladder.
type Context struct {
	Max int `json:"max"` // tokens; 0 = the largest entry the bundle has
}

// Drafter modes.
const (
	DrafterAuto = "auto"
	DrafterOn   = "on"
	DrafterOff  = "off"
)

// Backend settings: auto chooses Core AI on a Mac with the bridge and the
// reference engine over export/ elsewhere (daemon/modelbackend.Choose).
const (
	BackendAuto   = "auto"
	BackendCoreAI = "coreai"
	BackendRef    = "ref"
)

// DefaultRepo is the published bundle the daemon tracks unless told otherwise.
const DefaultRepo = "anemll/anemll-forge-qwen3.8-27B"

// Default returns the configuration used for every key the file leaves out,
// for the current user (root gets the system paths).
func Default() *Config {
	return &Config{
		Socket:   paths.Socket(),
		DataDir:  paths.DataDir(),
		Repo:     DefaultRepo,
		Revision: "main",
		Update: Update{
			Auto:     true,
			Interval: Duration(6 * time.Hour),
			Jitter:   Duration(30 * time.Minute),
		},
		Download:     Download{MinRate: 32 << 10, RateWindow: Duration(time.Minute)},
		Memory:       Memory{Reserve: 4 << 30},
		KeepAlive:    Duration(10 * time.Minute),
		AllowedUsers: []string{}, // written as [], never null
		Limits: Limits{MaxFrame: 1 << 20, PerCaller: 4, PerUID: 16, MaxQueue: 256, Slots: 1,
			SessionsPerConnection: 64, SessionsPerUID: 256,
			HelloTimeout: Duration(10 * time.Second), IdleTimeout: Duration(time.Hour),
			MaxConns: 1024, ConnsPerUID: 128, StreamsPerConn: 64},
		Drafter:  DrafterAuto,
		Backend:  BackendAuto,
		LogLevel: "info",
		HTTP:     HTTP{IdleTimeout: Duration(time.Minute)},
	}
}

// DefaultPath is where forged looks for its config file when --config is not
// given: a per-user file, or the system one for root.
func DefaultPath() string {
	return PathFor(os.Geteuid() == 0)
}

// PathFor is the config file of the system service (system) or of the
// current user's agent (internal/paths decides it).
func PathFor(system bool) string { return paths.Config(system) }

// Load reads and validates the file at path. A missing file is not an error:
// the defaults apply (a fresh install has no config file).
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Default(), nil
	}
	if err != nil {
		return nil, err
	}
	c, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// Parse reads a config file's bytes over the defaults and validates the result.
func Parse(data []byte) (*Config, error) {
	c := Default()
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("empty file (write {} for all defaults)")
	}
	if err := decodeStrict("", data, reflect.ValueOf(c).Elem()); err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// Marshal writes c as the indented JSON a user would edit.
func (c *Config) Marshal() ([]byte, error) {
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

// Validate checks every key's rule and reports all violations, each naming its key.
func (c *Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}
	if c.Socket == "" || !filepath.IsAbs(c.Socket) {
		bad("socket", "must be an absolute path, got %q", c.Socket)
	} else if len(c.Socket) >= 104 { // sun_path on macOS, the smaller of the two
		bad("socket", "must be shorter than 104 bytes (the Unix socket path limit), got %d", len(c.Socket))
	}
	if c.DataDir == "" || !filepath.IsAbs(c.DataDir) {
		bad("data_dir", "must be an absolute path, got %q", c.DataDir)
	}
	if c.Repo == "" || strings.Count(c.Repo, "/") != 1 || strings.HasPrefix(c.Repo, "/") || strings.HasSuffix(c.Repo, "/") {
		bad("repo", `must be "owner/name", got %q`, c.Repo)
	}
	if c.Revision == "" {
		bad("revision", "must not be empty (a branch, tag or 40-hex commit)")
	}
	if c.Update.Interval < Duration(time.Minute) {
		bad("update.interval", "must be at least 1m, got %q", c.Update.Interval)
	}
	if c.Update.Jitter < 0 || c.Update.Jitter > c.Update.Interval {
		bad("update.jitter", "must be between 0 and update.interval (%s), got %q", c.Update.Interval, c.Update.Jitter)
	}
	if c.Update.Bandwidth != 0 && c.Update.Bandwidth < 64<<10 {
		bad("update.bandwidth_limit", "must be 0 (unlimited) or at least 64KiB per second, got %s", c.Update.Bandwidth)
	}
	if c.Download.MinRate > 1<<30 {
		bad("download.min_rate", "must be 0 (no rule) or a rate up to 1GiB per second, got %s", c.Download.MinRate)
	}
	if c.Download.RateWindow < Duration(time.Second) || c.Download.RateWindow > Duration(time.Hour) {
		bad("download.rate_window", "must be between 1s and 1h, got %q", c.Download.RateWindow)
	}
	if c.KeepAlive < 0 {
		bad("keep_alive", "must not be negative, got %q (use 0 to unload as soon as idle)", c.KeepAlive)
	}
	if c.Memory.Reserve > 1<<40 {
		bad("memory.reserve", "must be at most 1TiB, got %s", c.Memory.Reserve)
	}
	if c.AdminGroup != "" && !validName(c.AdminGroup) {
		bad("admin_group", "must be a group name or numeric gid, got %q", c.AdminGroup)
	}
	for i, u := range c.AllowedUsers {
		if !validName(u) {
			bad(fmt.Sprintf("allowed_users[%d]", i), "must be a user name or numeric uid, got %q", u)
		}
	}
	if c.Limits.MaxFrame < 4<<10 || c.Limits.MaxFrame > 64<<20 {
		bad("limits.max_frame", "must be between 4096 and 67108864 bytes, got %d", c.Limits.MaxFrame)
	}
	if c.Limits.PerCaller < 1 {
		bad("limits.per_caller", "must be at least 1, got %d", c.Limits.PerCaller)
	}
	if c.Limits.PerUID < 1 {
		bad("limits.per_uid", "must be at least 1, got %d", c.Limits.PerUID)
	}
	if c.Limits.SessionsPerConnection < 1 {
		bad("limits.sessions_per_connection", "must be at least 1, got %d", c.Limits.SessionsPerConnection)
	}
	if c.Limits.SessionsPerUID < 1 {
		bad("limits.sessions_per_uid", "must be at least 1, got %d", c.Limits.SessionsPerUID)
	}
	if c.Limits.MaxQueue < 1 {
		bad("limits.max_queue", "must be at least 1, got %d", c.Limits.MaxQueue)
	}
	if c.Limits.Slots < 1 || c.Limits.Slots > 64 {
		bad("limits.slots", "must be between 1 and 64, got %d", c.Limits.Slots)
	}
	if l := c.Limits; l.HelloTimeout < Duration(100*time.Millisecond) || l.HelloTimeout > Duration(10*time.Minute) {
		bad("limits.hello_timeout", `must be between "100ms" and "10m", got %q`, l.HelloTimeout)
	}
	if l := c.Limits; l.IdleTimeout < Duration(time.Second) {
		bad("limits.idle_timeout", `must be at least "1s", got %q`, l.IdleTimeout)
	}
	if l := c.Limits; l.MaxConns < 1 || l.MaxConns > 1<<20 {
		bad("limits.max_conns", "must be between 1 and 1048576, got %d", l.MaxConns)
	}
	if l := c.Limits; l.ConnsPerUID < 1 || l.ConnsPerUID > l.MaxConns {
		bad("limits.conns_per_uid", "must be between 1 and limits.max_conns (%d), got %d", l.MaxConns, l.ConnsPerUID)
	}
	if l := c.Limits; l.StreamsPerConn < 1 || l.StreamsPerConn > 1<<16 {
		bad("limits.streams_per_conn", "must be between 1 and 65536, got %d", l.StreamsPerConn)
	}
	if c.Context.Max != 0 && (c.Context.Max < 1024 || c.Context.Max%1024 != 0) {
		bad("context.max", "must be 0 (no cap) or a multiple of 1024 tokens, got %d", c.Context.Max)
	}
	switch c.Drafter {
	case DrafterAuto, DrafterOn, DrafterOff:
	default:
		bad("drafter", `must be "auto", "on" or "off", got %q`, c.Drafter)
	}
	switch c.Backend {
	case BackendAuto, BackendCoreAI, BackendRef:
	default:
		bad("backend", `must be "auto", "coreai" or "ref", got %q`, c.Backend)
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		bad("log_level", `must be "debug", "info", "warn" or "error", got %q`, c.LogLevel)
	}
	if h := c.HTTP.Socket; h != "" && h != HTTPOff {
		if !filepath.IsAbs(h) {
			bad("http.socket", `must be "" (beside socket), "off" or an absolute path, got %q`, h)
		} else if len(h) >= 104 {
			bad("http.socket", "must be shorter than 104 bytes (the Unix socket path limit), got %d", len(h))
		}
	}
	if err := CheckLoopback(c.HTTP.Listen); c.HTTP.Listen != "" && err != nil {
		bad("http.listen", "%v", err)
	}
	if d := c.HTTP.IdleTimeout; d < Duration(time.Second) || d > Duration(time.Hour) {
		bad("http.idle_timeout", `must be between "1s" and "1h", got %q`, d)
	}
	return errors.Join(errs...)
}

// validName accepts a user or group name (POSIX portable characters) or a number.
func validName(s string) bool {
	if s == "" || len(s) > 64 || s[0] == '-' {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return false
		}
	}
	return true
}

// RestartKeys are the keys a running daemon cannot apply without a restart.
var RestartKeys = []string{"socket", "data_dir", "backend", "http.socket", "http.listen", "http.idle_timeout"}

// CheckLoopback accepts only a loopback TCP address: host:port with host
// localhost, 127.0.0.0/8 or ::1. The HTTP API's TCP listener carries no
// caller identity, so it is never offered off the machine.
func CheckLoopback(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not host:port (want 127.0.0.1:PORT): %v", addr, err)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("%q: the port must be a number, 0-65535 (0: any free port)", addr)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("%q is not a loopback address: the TCP listener serves only this machine (use 127.0.0.1:PORT or [::1]:PORT)", addr)
	}
	return nil
}

// Changed lists the keys (dotted paths) whose values differ between a and b.
func Changed(a, b *Config) []string {
	var out []string
	diffValues("", reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem(), &out)
	sort.Strings(out)
	return out
}

func diffValues(prefix string, a, b reflect.Value, out *[]string) {
	if _, leaf := a.Interface().(json.Marshaler); a.Kind() == reflect.Struct && !leaf {
		for i := 0; i < a.NumField(); i++ {
			diffValues(join(prefix, jsonName(a.Type().Field(i))), a.Field(i), b.Field(i), out)
		}
		return
	}
	if !reflect.DeepEqual(a.Interface(), b.Interface()) {
		*out = append(*out, prefix)
	}
}

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}

func join(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}

// decodeStrict decodes data into v, refusing keys v does not have and
// naming the key path in every error.
func decodeStrict(path string, data []byte, v reflect.Value) error {
	if path != "" && string(bytes.TrimSpace(data)) == "null" {
		// encoding/json would silently keep the default for some types
		// and call UnmarshalJSON for others; make it one rule.
		return fmt.Errorf("%s: null is not a value (leave the key out to keep its default)", path)
	}
	_, custom := v.Addr().Interface().(json.Unmarshaler)
	if v.Kind() != reflect.Struct || custom {
		if err := json.Unmarshal(data, v.Addr().Interface()); err != nil {
			return fmt.Errorf("%s: %s", path, describeJSONError(err, v.Type()))
		}
		return nil
	}
	var fields map[string]json.RawMessage
	err := strictjson.Decode(data, &fields, strictjson.Options{})
	var dup *strictjson.DuplicateKeyError
	switch {
	case errors.Is(err, strictjson.ErrTrailingData):
		return fmt.Errorf("config: %w", err)
	case errors.As(err, &dup):
		return fmt.Errorf("%s: key given twice", join(path, dup.Path()))
	case err != nil || fields == nil:
		where := path
		if where == "" {
			where = "config"
		}
		if err == nil {
			err = errors.New("null")
		}
		return fmt.Errorf("%s: must be a JSON object: %v", where, err)
	}
	byName := map[string]int{}
	var known []string
	for i := 0; i < v.NumField(); i++ {
		name := jsonName(v.Type().Field(i))
		byName[name] = i
		known = append(known, name)
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		i, ok := byName[k]
		if !ok {
			return fmt.Errorf("%s: unknown key (known keys here: %s)", join(path, k), strings.Join(known, ", "))
		}
		if err := decodeStrict(join(path, k), fields[k], v.Field(i)); err != nil {
			return err
		}
	}
	return nil
}

func describeJSONError(err error, t reflect.Type) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("must be %s, got a JSON %s", kindName(t), te.Value)
	}
	return err.Error()
}

func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Int:
		return "an integer"
	case reflect.String:
		return "a string"
	case reflect.Slice:
		return "a list of " + strings.TrimPrefix(kindName(t.Elem()), "a ") + "s"
	}
	return t.String()
}
