package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// EnvPrefix starts every environment variable mull reads.
const EnvPrefix = "MULL_"

// Source says where configuration comes from, in order of precedence.
type Source struct {
	// File is a TOML file to read; empty reads none.
	File string
	// Environ is the environment, as os.Environ returns it.
	Environ []string
	// Flags are key=value settings from the command line, keyed like the
	// file (for example "log.level"). They win over everything else.
	Flags map[string]string
}

// Load builds the effective configuration from defaults, file, environment and
// flags, then validates it. Every error is an *Error naming the key.
func Load(src Source) (Config, error) {
	var b []byte
	if src.File != "" {
		var err error
		if b, err = os.ReadFile(src.File); err != nil {
			return Config{}, &Error{Key: "config", Problem: err.Error()}
		}
	}
	return LoadBytes(b, src)
}

// LoadBytes is Load with the file's content already read (b; nil: no
// file): the config watcher checks the bytes it hashed.
func LoadBytes(b []byte, src Source) (Config, error) {
	var c Config
	if b != nil {
		if err := decodeTOML(b, &c); err != nil {
			return Config{}, err
		}
	}
	env := map[string]string{}
	for _, kv := range src.Environ {
		if k, v, ok := strings.Cut(kv, "="); ok && (strings.HasPrefix(k, EnvPrefix) || k == "DEEPSEEK_API_KEY") {
			env[k] = v
		}
	}
	// DeepSeek's own variable name works too; MULL_LLM_API_KEY wins.
	if v, ok := env["DEEPSEEK_API_KEY"]; ok && env["MULL_LLM_API_KEY"] == "" {
		env["MULL_LLM_API_KEY"] = v
	}
	if err := walk(&c, func(key string, v reflect.Value, _ reflect.StructField) error {
		name := EnvPrefix + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
		if s, ok := env[name]; ok {
			if err := setScalar(v, s); err != nil {
				return &Error{Key: name, Problem: err.Error()}
			}
		}
		if s, ok := src.Flags[key]; ok {
			if err := setScalar(v, s); err != nil {
				return &Error{Key: "--" + strings.ReplaceAll(key, "_", "-"), Problem: err.Error()}
			}
		}
		return nil
	}); err != nil {
		return Config{}, err
	}
	c = c.WithDefaults()
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

func decodeTOML(b []byte, c *Config) error {
	md, err := toml.NewDecoder(bytes.NewReader(b)).Decode(c)
	if err != nil {
		var perr toml.ParseError
		if errors.As(err, &perr) {
			return &Error{Key: "config", Problem: fmt.Sprintf("line %d: %s", perr.Position.Line, perr.Message)}
		}
		return &Error{Key: "config", Problem: err.Error()}
	}
	return unknownKeys(md.Undecoded())
}

// walk calls fn for every scalar field reachable through nested structs,
// with its dotted TOML key. Maps and slices are file-only, except a
// []string tagged env:"list".
func walk(c *Config, fn func(key string, v reflect.Value, f reflect.StructField) error) error {
	var visit func(prefix string, v reflect.Value) error
	visit = func(prefix string, v reflect.Value) error {
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
			if name == "" || name == "-" {
				continue
			}
			key := prefix + name
			fv := v.Field(i)
			switch fv.Kind() {
			case reflect.Struct:
				if err := visit(key+".", fv); err != nil {
					return err
				}
			case reflect.Slice:
				// A list settable from text is comma-separated there.
				if f.Tag.Get("env") == "list" {
					if err := fn(key, fv, f); err != nil {
						return err
					}
				}
			case reflect.Pointer:
				// A switch whose unset value is not false (a *bool
				// tagged env:"bool"), or a span whose 0 means something
				// (a *Duration tagged env:"duration"), or a fraction whose
				// 0 turns a check off (a *float64 tagged env:"number"), is
				// settable from text too.
				if tag := f.Tag.Get("env"); tag == "bool" || tag == "duration" || tag == "number" {
					if err := fn(key, fv, f); err != nil {
						return err
					}
				}
			case reflect.Map:
			default:
				if err := fn(key, fv, f); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return visit("", reflect.ValueOf(c).Elem())
}

// Keys lists every key that the environment and flags can set.
func Keys() []string {
	var keys []string
	var c Config
	_ = walk(&c, func(key string, _ reflect.Value, _ reflect.StructField) error {
		keys = append(keys, key)
		return nil
	})
	return keys
}

func setScalar(v reflect.Value, s string) error {
	if v.Type() == reflect.TypeFor[Duration]() {
		d, err := ParseDuration(s)
		if err != nil {
			return err
		}
		v.SetInt(int64(d))
		return nil
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.Type().Elem() == reflect.TypeFor[Duration]() {
			d, err := ParseDuration(s)
			if err != nil {
				return err
			}
			dd := Duration(d)
			v.Set(reflect.ValueOf(&dd))
			return nil
		}
		if v.Type().Elem().Kind() == reflect.Float64 {
			n, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return fmt.Errorf("%q is not a number", s)
			}
			v.Set(reflect.ValueOf(&n))
			return nil
		}
		if v.Type().Elem().Kind() != reflect.Bool {
			return fmt.Errorf("cannot be set from text")
		}
		b, err := strconv.ParseBool(s)
		if err != nil {
			return fmt.Errorf("%q is not true or false", s)
		}
		v.Set(reflect.ValueOf(&b))
	case reflect.Slice:
		var list []string
		for item := range strings.SplitSeq(s, ",") {
			if item = strings.TrimSpace(item); item != "" {
				list = append(list, item)
			}
		}
		v.Set(reflect.ValueOf(list))
	case reflect.String:
		v.SetString(s)
	case reflect.Float64:
		n, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return fmt.Errorf("%q is not a number", s)
		}
		v.SetFloat(n)
	case reflect.Int, reflect.Int64:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("%q is not a whole number", s)
		}
		v.SetInt(n)
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return fmt.Errorf("%q is not true or false", s)
		}
		v.SetBool(b)
	default:
		return fmt.Errorf("cannot be set from text")
	}
	return nil
}

// Print writes the configuration as TOML with secrets masked.
func (c Config) Print() (string, error) {
	_ = walk(&c, func(_ string, v reflect.Value, f reflect.StructField) error {
		switch f.Tag.Get("secret") {
		case "url":
			v.SetString(MaskURL(v.String()))
		case "true":
			if v.String() != "" {
				v.SetString("xxxxx")
			}
		}
		return nil
	})
	var buf bytes.Buffer
	if err := toml.NewEncoder(&buf).Encode(c); err != nil {
		return "", err
	}
	return buf.String(), nil
}
