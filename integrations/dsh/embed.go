// Package dsh carries mull's DSH bridge plugin inside the mull binary, so
// that 'mull dsh install' can write it where DSH loads it from however mull
// was installed (go install leaves no checkout behind), and the plugin
// always matches the mull that installed it.
package dsh

import "embed"

// Plugin is the plugin as DSH loads it: plugin.mjs, its lib/ and the
// README that documents its config keys. Tests and test kits stay out.
//
//go:embed plugin.mjs lib/*.mjs README.md
var Plugin embed.FS

// Entry is the file DSH's patch row names.
const Entry = "plugin.mjs"
