package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// loadYAML applies the YAML file at path, shown as name in problems, to a.
// Every key it cannot take is a problem at its line and column: unknown
// (with the key it most likely misspells), given twice, of the wrong type,
// or a secret. The keys it takes become origins of their settings.
func (a *App) loadYAML(name, path string) []error {
	data, err := os.ReadFile(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return []error{fmt.Errorf("%s: cannot read the configuration file: %w", name, err)}
	}
	root, dp := parseDocument(data)
	switch {
	case dp != nil:
		return []error{&fileProblem{file: name, line: dp.line, msg: dp.msg}}
	case root == nil:
		return nil
	case root.Kind != yaml.MappingNode:
		return []error{&fileProblem{file: name, line: root.Line, col: root.Column,
			msg: "the file must be a mapping of keys to values, like `model: openai/gpt-5`; got " + describe(root)}}
	}
	d := &yamlDecoder{file: name}
	set, _ := d.decodeStruct(root, nil, fields(a))
	for _, s := range set {
		a.setOrigin(s.field, &origin{file: name, line: s.key.Line, key: s.key.Value})
	}
	return d.problems
}

// yamlDecoder decodes a YAML file into settings key by key, with a problem
// for each key or value it cannot take.
type yamlDecoder struct {
	file     string
	problems []error
}

// add records a problem at the node n, about the key at path.
func (d *yamlDecoder) add(n *yaml.Node, path []string, msg string) {
	d.problems = append(d.problems, &fileProblem{file: d.file, line: n.Line, col: n.Column, key: strings.Join(path, ": "), msg: msg})
}

// setting is a field set from a key of the file.
type setting struct {
	field field
	key   *yaml.Node
}

// decodeStruct sets the fields fs from the mapping n, whose keys are at
// path (the keys leading to n). It returns the fields set and whether
// every key was taken.
func (d *yamlDecoder) decodeStruct(n *yaml.Node, path []string, fs []field) ([]setting, bool) {
	byKey := map[string]field{}
	for _, f := range fs {
		byKey[f.key] = f
	}
	before := len(d.problems)
	seen := map[string]int{}
	var set []setting
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
			d.add(k, path, "keys must be names, got "+describe(k))
			continue
		}
		at := append(slices.Clip(path), k.Value)
		if first, dup := seen[k.Value]; dup {
			d.add(k, at, fmt.Sprintf("given twice (first on line %d)", first))
			continue
		}
		seen[k.Value] = k.Line
		f, ok := byKey[k.Value]
		switch {
		case !ok:
			d.add(k, at, unknownKeyOf(k.Value, fs))
		case f.secret:
			d.add(k, at, fmt.Sprintf("is a secret, which may not be in this file; set %s in the environment or in .env instead", f.env))
		case f.urlPassword && deref(v).Kind == yaml.ScalarNode && hasPassword(deref(v).Value):
			d.add(k, at, fmt.Sprintf("holds a password, which may not be in this file; set %s in the environment or in .env instead", f.env))
		case d.decodeValue(f.value, v, at):
			set = append(set, setting{field: f, key: k})
		}
	}
	return set, len(d.problems) == before
}

// decodeValue sets v from the node raw (an alias is followed) and reports
// whether it could.
func (d *yamlDecoder) decodeValue(v reflect.Value, raw *yaml.Node, path []string) bool {
	n := deref(raw)
	switch {
	case v.Kind() == reflect.Map:
		return d.decodeMap(v, raw, path)
	case v.Kind() == reflect.Struct:
		if n.Kind != yaml.MappingNode {
			d.add(raw, path, fmt.Sprintf("must be a mapping with the keys %s; got %s", strings.Join(keysOf(structFields(v)), ", "), describe(n)))
			return false
		}
		_, ok := d.decodeStruct(n, path, structFields(v))
		return ok
	}
	if err := setFromYAML(v, n); err != nil {
		d.add(raw, path, err.Error())
		return false
	}
	return true
}

// decodeMap sets the map v from the mapping raw, whose keys are free (model
// names), and reports whether it could take every entry. v is set only
// then.
func (d *yamlDecoder) decodeMap(v reflect.Value, raw *yaml.Node, path []string) bool {
	n := deref(raw)
	if n.Kind != yaml.MappingNode {
		d.add(raw, path, fmt.Sprintf("must be %s; got %s", valueKinds[v.Type()].words, describe(n)))
		return false
	}
	m := reflect.MakeMapWithSize(v.Type(), len(n.Content)/2)
	seen := map[string]int{}
	ok := true
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, e := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
			d.add(k, path, "keys must be names, got "+describe(k))
			ok = false
			continue
		}
		at := append(slices.Clip(path), k.Value)
		if first, dup := seen[k.Value]; dup {
			d.add(k, at, fmt.Sprintf("given twice (first on line %d)", first))
			ok = false
			continue
		}
		seen[k.Value] = k.Line
		elem := reflect.New(v.Type().Elem()).Elem()
		if !d.decodeValue(elem, e, at) {
			ok = false
			continue
		}
		m.SetMapIndex(reflect.ValueOf(k.Value), elem)
	}
	if ok {
		v.Set(m)
	}
	return ok
}

// unknownKeyOf says that key is none of fs, suggesting the one it looks like
// or listing them (secrets, which may not be in the file, left out).
func unknownKeyOf(key string, fs []field) string {
	if s := suggest(key, keysOf(fs)); s != "" {
		msg := fmt.Sprintf("unknown key; did you mean %s?", s)
		for _, f := range fs {
			if f.key == s && f.secret {
				msg += fmt.Sprintf(" It is a secret: set %s in the environment or in .env, not in this file", f.env)
			}
		}
		return msg
	}
	var listed []string
	for _, f := range fs {
		if !f.secret {
			listed = append(listed, f.key)
		}
	}
	return "unknown key; the keys are " + strings.Join(listed, ", ")
}

// keysOf lists the YAML keys of fs.
func keysOf(fs []field) []string {
	keys := make([]string, len(fs))
	for i, f := range fs {
		keys[i] = f.key
	}
	return keys
}
