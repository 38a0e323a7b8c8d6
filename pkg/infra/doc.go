// Package infra is the small plugin framework every contiv binary is built on, in the
// spirit of Ligato cn-infra but without its service locator:
//
//   - A plugin is a struct with a Deps struct holding everything it needs, filled in by
//     cmd/<binary>, plus Init, optional AfterInit, Close and String (Plugin, PostInit).
//   - An Agent runs Init of every plugin in order, then AfterInit in order, within a
//     start-up timeout (STARTUPTIMEOUT, default 45s); it closes the plugins in reverse
//     order on SIGINT/SIGTERM, and closes the already initialised ones when start-up fails.
//   - ConfigFile finds a plugin's configuration the Ligato way (-<name>-config flag,
//     <NAME>_CONFIG env, optional <name>.conf in $CONFIG_DIR) and parses YAML through JSON
//     tags, naming every unknown key (a warning, or an error in strict mode).
//   - LogRegistry gives each plugin a named logrus logger with its own level (logs.conf)
//     and a shared text or JSON format.
//
// It is not a dependency injection container: nothing is looked up by name at run time.
package infra
