package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/spf13/pflag"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/internal/cli"
	"github.com/spf13/cobra"
)

func newConfigCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "config",
		Short: "Read the running daemon's configuration and change its config file",
		Long: `config get prints the daemon's effective settings (the config.get op);
config set KEY VALUE edits one key of the config file the daemon follows
(docs/CONFIG.md), which the daemon validates, writes atomically and applies
before answering. Both are admin operations and need a running daemon.`,
	}

	get := &cobra.Command{
		Use:   "get [KEY]",
		Short: "Print the effective configuration, or one value of it",
		Args:  cobra.MaximumNArgs(1),
	}
	getSocket := cli.SocketFlag(get)
	getJSON := cli.JSONFlag(get)
	get.RunE = func(cmd *cobra.Command, args []string) error {
		cl, err := cli.Dial(cmd.Context(), *getSocket)
		if err != nil {
			return err
		}
		defer cl.Close()
		v, err := cl.ConfigGet(cmd.Context())
		if err != nil {
			return err
		}
		return showConfig(cmd.OutOrStdout(), v, cli.OptionalArg(args), *getJSON)
	}

	set := &cobra.Command{
		Use:   "set KEY VALUE",
		Short: "Set one key of the daemon's config file (for example keep_alive 5m)",
		Long: `VALUE is read as JSON when it is JSON (8, true, ["alice","bob"], "text"),
and as text otherwise (5m, staff); --string always sends it as text. A
negative VALUE is an argument, not a flag (config set limits.per_caller -2
reaches the daemon, which says what the key accepts); any other VALUE
starting with "-" follows "--" (forgectl config set KEY -- -text).

keep_alive is a duration, 0s or more ("0s": unload as soon as idle); the file
cannot say "never": pin the model instead (forgectl pin). docs/CONFIG.md has
every key.`,
		// VALUE may be negative ("-1s", "-2"), which pflag would read as
		// shorthand flags: the arguments are parsed by configSetArgs.
		DisableFlagParsing: true,
	}
	setSocket := cli.SocketFlag(set)
	setJSON := cli.JSONFlag(set)
	asString := set.Flags().Bool("string", false, "send VALUE as text even if it reads as JSON (a group named 1000)")
	set.RunE = func(cmd *cobra.Command, raw []string) error {
		args, err := configSetArgs(cmd, raw)
		if errors.Is(err, pflag.ErrHelp) {
			return cmd.Help()
		}
		if err != nil {
			return err
		}
		value, err := configValue(args[1], *asString)
		if err != nil {
			return err
		}
		cl, err := cli.Dial(cmd.Context(), *setSocket)
		if err != nil {
			return err
		}
		defer cl.Close()
		var res wire.ConfigSetResult
		if err := cl.Admin(cmd.Context(), wire.OpConfigSet, wire.ConfigSetArgs{Key: args[0], Value: value}, &res); err != nil {
			var we *wire.Error
			if args[0] == "keep_alive" && negative(args[1]) && errors.As(err, &we) && we.Code == wire.CodeBadRequest {
				return fmt.Errorf("%w; to never unload the model, pin it: forgectl pin", err)
			}
			return err
		}
		if *setJSON {
			return cli.WriteJSON(cmd.OutOrStdout(), res)
		}
		w := cmd.OutOrStdout()
		if len(res.Changed) == 0 {
			fmt.Fprintf(w, "%s: unchanged\n", args[0])
			return nil
		}
		fmt.Fprintf(w, "changed: %s\n", strings.Join(res.Changed, ", "))
		if len(res.RestartNeeded) > 0 {
			fmt.Fprintf(w, "restart forged to apply: %s\n", strings.Join(res.RestartNeeded, ", "))
		}
		return nil
	}
	c.AddCommand(get, set)
	return c
}

// configSetArgs parses config set's command line: flags anywhere, and
// KEY VALUE, where an argument that reads as a negative number or
// duration ("-2", "-1s", "-.5") is an argument, not a flag. It returns
// pflag.ErrHelp for -h/--help.
func configSetArgs(cmd *cobra.Command, raw []string) ([]string, error) {
	var flags, args []string
	for i := 0; i < len(raw); i++ {
		a := raw[i]
		switch {
		case a == "--":
			args = append(args, raw[i+1:]...)
			i = len(raw)
		case negative(a) || !strings.HasPrefix(a, "-") || a == "-":
			args = append(args, a)
		default:
			flags = append(flags, a)
			// --socket S: the flag's value is the next argument.
			name := strings.TrimLeft(a, "-")
			if f := cmd.Flags().Lookup(name); f != nil && !strings.Contains(a, "=") && f.NoOptDefVal == "" && i+1 < len(raw) {
				i++
				flags = append(flags, raw[i])
			} else if len(name) == 1 && !strings.HasPrefix(a, "--") {
				if f := cmd.Flags().ShorthandLookup(name); f != nil && f.NoOptDefVal == "" && i+1 < len(raw) {
					i++
					flags = append(flags, raw[i])
				}
			}
		}
	}
	if err := cmd.Flags().Parse(flags); err != nil {
		return nil, err
	}
	if help, _ := cmd.Flags().GetBool("help"); help {
		return nil, pflag.ErrHelp
	}
	if len(args) != 2 {
		return nil, fmt.Errorf("config set takes KEY VALUE, got %d argument(s) %q", len(args), args)
	}
	return args, nil
}

// negative reports whether a reads as a negative number or duration.
func negative(a string) bool {
	return len(a) > 1 && a[0] == '-' && (a[1] >= '0' && a[1] <= '9' || a[1] == '.')
}

// configValue turns the VALUE argument into what config.set sends: JSON
// when it parses as one JSON value (numbers as integers where exact), else
// the text itself.
func configValue(arg string, asString bool) (any, error) {
	if asString {
		return arg, nil
	}
	dec := json.NewDecoder(strings.NewReader(arg))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return arg, nil // not JSON: plain text such as 5m
	}
	if _, err := dec.Token(); err != io.EOF {
		return arg, nil
	}
	return fromJSON(v)
}

// fromJSON converts json.Number to int64, uint64 or float64, recursively,
// so msgpack sends the number the file will hold.
func fromJSON(v any) (any, error) {
	switch v := v.(type) {
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i, nil
		}
		f, err := v.Float64()
		if err != nil {
			return nil, fmt.Errorf("VALUE: the number %s is out of range", v)
		}
		return f, nil
	case []any:
		for i, e := range v {
			var err error
			if v[i], err = fromJSON(e); err != nil {
				return nil, err
			}
		}
	case map[string]any:
		for k, e := range v {
			var err error
			if v[k], err = fromJSON(e); err != nil {
				return nil, err
			}
		}
	case nil:
		return nil, errors.New("VALUE: null is not a value (give the value the key should have)")
	}
	return v, nil
}

// fileKeys are the config file's names (what config set takes,
// docs/CONFIG.md) of the settings config.get reports under the protocol's
// names. Settings the file does not hold keep the protocol's name.
var fileKeys = map[string]string{
	"keep_alive_ms":           "keep_alive",
	"max_frame":               "limits.max_frame",
	"slots":                   "limits.slots",
	"max_queue":               "limits.max_queue",
	"per_caller":              "limits.per_caller",
	"per_uid":                 "limits.per_uid",
	"sessions_per_connection": "limits.sessions_per_connection",
	"sessions_per_uid":        "limits.sessions_per_uid",
}

// configRow is one setting as config get shows it.
type configRow struct {
	name, wireName string
	value          json.RawMessage // as the file would hold it
	wireValue      json.RawMessage // as config.get has it
}

// configRows turns config.get's result into rows under the file's names,
// in the result's order: keep_alive as a duration ("10m"; "never" for the
// protocol's -1, a negative forged run --keep-alive).
func configRows(v *wire.ConfigValues) ([]configRow, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	keys, values, err := jsonFields(raw)
	if err != nil {
		return nil, err
	}
	rows := make([]configRow, 0, len(keys))
	for _, k := range keys {
		r := configRow{name: k, wireName: k, value: values[k], wireValue: values[k]}
		if n, ok := fileKeys[k]; ok {
			r.name = n
		}
		if k == "keep_alive_ms" && v.KeepAliveMS != nil {
			r.value, _ = json.Marshal(keepAliveText(*v.KeepAliveMS))
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// keepAliveText is config.get's keep_alive_ms as the file writes a
// duration ("10m", "30s", "1h30m"); -1 (or any negative) is "never".
func keepAliveText(ms int64) string {
	if ms < 0 {
		return "never"
	}
	s := (time.Duration(ms) * time.Millisecond).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// showConfig prints the effective configuration as "key  value" lines
// under the file's names, in the order of config.get's result, or the
// value of one key (the file's name, or the protocol's for scripts that
// read config.get). --json without KEY prints config.get's result as the
// protocol has it (docs/PROTOCOL.md).
func showConfig(w io.Writer, v *wire.ConfigValues, key string, asJSON bool) error {
	if key == "" && asJSON {
		return cli.WriteJSON(w, v)
	}
	rows, err := configRows(v)
	if err != nil {
		return err
	}
	if key == "" {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for _, r := range rows {
			fmt.Fprintf(tw, "%s\t%s\n", r.name, plain(r.value))
		}
		return tw.Flush()
	}
	var names []string
	for _, r := range rows {
		if key == r.name || key == r.wireName {
			val := r.value
			if key != r.name {
				val = r.wireValue
			}
			if !asJSON {
				val = json.RawMessage(plain(val))
			}
			_, err = fmt.Fprintf(w, "%s\n", val)
			return err
		}
		names = append(names, r.name)
	}
	why := ""
	if k := key; k == "keep_alive" || k == "keep_alive_ms" {
		why = " (the daemon reports no keep-alive: its model is not under residency control)"
	}
	return fmt.Errorf("config.get has no key %q%s: it has %s (config set takes the file's keys, docs/CONFIG.md)", key, why, strings.Join(names, ", "))
}

// jsonFields splits a JSON object into its keys, in order, and their values.
func jsonFields(raw []byte) ([]string, map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // {
		return nil, nil, err
	}
	var keys []string
	values := map[string]json.RawMessage{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		k, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		keys = append(keys, k)
		values[k] = v
	}
	return keys, values, nil
}

// plain shows a JSON value to people: strings without quotes.
func plain(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	return string(v)
}
