// Package grammar constrains decoding to a grammar: rules of byte automata
// that call each other (Builder, Grammar), a model vocabulary as a token
// trie (Vocab), and a Matcher that computes the mask of tokens allowed
// next, accepts tokens and rolls them back. ane/grammar/jsonschema
// compiles JSON Schema into it; docs/GRAMMAR.md describes the design.
package grammar
