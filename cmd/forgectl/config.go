package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

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
and as text otherwise (5m, staff); --string always sends it as text. A value
starting with "-" follows "--" (forgectl config set --socket S KEY -- -1).`,
		Args: cobra.ExactArgs(2),
	}
	setSocket := cli.SocketFlag(set)
	setJSON := cli.JSONFlag(set)
	asString := set.Flags().Bool("string", false, "send VALUE as text even if it reads as JSON (a group named 1000)")
	set.RunE = func(cmd *cobra.Command, args []string) error {
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

// showConfig prints the effective configuration as "key  value" lines, in
// the order of config.get's result, or the value of one key.
func showConfig(w io.Writer, v *wire.ConfigValues, key string, asJSON bool) error {
	if key == "" && asJSON {
		return cli.WriteJSON(w, v)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	keys, values, err := jsonFields(raw)
	if err != nil {
		return err
	}
	if key == "" {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for _, k := range keys {
			fmt.Fprintf(tw, "%s\t%s\n", k, plain(values[k]))
		}
		return tw.Flush()
	}
	val, ok := values[key]
	if !ok {
		return fmt.Errorf("config.get has no key %q: it has %s (config set takes the file's keys, docs/CONFIG.md)", key, strings.Join(keys, ", "))
	}
	if !asJSON {
		val = json.RawMessage(plain(val))
	}
	_, err = fmt.Fprintf(w, "%s\n", val)
	return err
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
