// Package chat turns conversations into the model's prompt text with the
// checkpoint's own Jinja chat template, and turns the model's output back
// into reasoning, answer and tool calls.
package chat

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/forgedaemon/forged/ane/text/jinja"
)

// File names a checkpoint keeps its chat template in.
const (
	TokenizerConfigFile = "tokenizer_config.json"
	TemplateFile        = "chat_template.jinja"
)

// maxTemplateBytes bounds what is read from a checkpoint's template files.
const maxTemplateBytes = 4 << 20

// Template is a checkpoint's compiled chat template plus the special-token
// variables Hugging Face passes to it (bos_token, eos_token, …).
type Template struct {
	Source string
	tpl    *jinja.Template
	tokens *jinja.Dict
}

// LoadTemplate reads the chat template from path: a tokenizer_config.json,
// a chat_template.jinja, or the directory holding them (chat_template.jinja
// wins there, as in transformers; special tokens still come from
// tokenizer_config.json when it exists).
func LoadTemplate(path string) (*Template, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	cfgPath, jinjaPath := path, ""
	if st.IsDir() {
		cfgPath = filepath.Join(path, TokenizerConfigFile)
		if _, err := os.Stat(filepath.Join(path, TemplateFile)); err == nil {
			jinjaPath = filepath.Join(path, TemplateFile)
		}
	} else if strings.HasSuffix(path, ".jinja") {
		cfgPath, jinjaPath = "", path
	}
	var cfg []byte
	if cfgPath != "" {
		if cfg, err = readLimited(cfgPath); err != nil && (jinjaPath == "" || !errors.Is(err, os.ErrNotExist)) {
			return nil, err
		}
	}
	if jinjaPath != "" {
		src, err := readLimited(jinjaPath)
		if err != nil {
			return nil, err
		}
		tokens := jinja.NewDict()
		if cfg != nil {
			if tokens, err = specialTokens(cfg, cfgPath); err != nil {
				return nil, err
			}
		}
		return compile(string(src), tokens, jinjaPath)
	}
	return ParseTokenizerConfig(cfg, cfgPath)
}

func readLimited(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxTemplateBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(data) > maxTemplateBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, maxTemplateBytes)
	}
	return data, nil
}

// ParseTokenizerConfig compiles the chat_template of a tokenizer_config.json
// document. name labels errors (usually the file path). chat_template may be
// a string or a list of {name, template}, of which "default" is used.
func ParseTokenizerConfig(data []byte, name string) (*Template, error) {
	var cfg struct {
		ChatTemplate json.RawMessage `json:"chat_template"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(cfg.ChatTemplate) == 0 || string(cfg.ChatTemplate) == "null" {
		return nil, fmt.Errorf("%s: no chat_template (and no %s beside it)", name, TemplateFile)
	}
	var src string
	if err := json.Unmarshal(cfg.ChatTemplate, &src); err != nil {
		var named []struct {
			Name     string `json:"name"`
			Template string `json:"template"`
		}
		if json.Unmarshal(cfg.ChatTemplate, &named) != nil {
			return nil, fmt.Errorf("%s: chat_template must be a string or a list of {name, template}", name)
		}
		var names []string
		for _, t := range named {
			if t.Name == "default" {
				src = t.Template
			}
			names = append(names, t.Name)
		}
		if src == "" {
			return nil, fmt.Errorf("%s: chat_template has no template named \"default\" (it has %q)", name, names)
		}
	}
	tokens, err := specialTokens(data, name)
	if err != nil {
		return nil, err
	}
	return compile(src, tokens, name)
}

func compile(src string, tokens *jinja.Dict, name string) (*Template, error) {
	tpl, err := jinja.Parse(src)
	if err != nil {
		return nil, fmt.Errorf("%s: chat template: %w", name, err)
	}
	return &Template{Source: src, tpl: tpl, tokens: tokens}, nil
}

// specialTokens collects the special-token strings transformers passes to
// the template, each given either as a string or as {"content": …}.
func specialTokens(data []byte, name string) (*jinja.Dict, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	d := jinja.NewDict()
	for _, key := range []string{"bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"} {
		v, ok := raw[key]
		if !ok || string(v) == "null" {
			continue
		}
		var s string
		if json.Unmarshal(v, &s) != nil {
			var tok struct {
				Content *string `json:"content"`
			}
			if json.Unmarshal(v, &tok) != nil || tok.Content == nil {
				return nil, fmt.Errorf("%s: %s must be a string or {\"content\": string}", name, key)
			}
			s = *tok.Content
		}
		d.Set(key, s)
	}
	return d, nil
}

// Render renders the conversation in req to prompt text.
func (t *Template) Render(req *Request) (string, error) {
	return t.tpl.Render(t.variables(req))
}

// variables are the template's variables for req, as transformers passes them.
func (t *Template) variables(req *Request) *jinja.Dict {
	vars := jinja.NewDict()
	for _, k := range t.tokens.Keys() {
		v, _ := t.tokens.Get(k)
		vars.Set(k, v)
	}
	vars.Set("messages", req.Messages)
	// transformers always passes tools and documents, None when absent, so
	// templates may test "tools is not none" without "is defined".
	var tools jinja.Value // none
	if req.Tools != nil {
		tools = req.Tools
	}
	vars.Set("tools", tools)
	vars.Set("documents", nil)
	vars.Set("add_generation_prompt", req.AddGenerationPrompt)
	if req.Vars != nil {
		for _, k := range req.Vars.Keys() {
			v, _ := req.Vars.Get(k)
			vars.Set(k, v)
		}
	}
	return vars
}
