package infra

import (
	"encoding/json"
	"net/http"
)

// HandlerRegistrar is the part of the agent's HTTP server that plugins register on.
type HandlerRegistrar interface {
	HandleFunc(pattern string, handler func(http.ResponseWriter, *http.Request))
}

// RegisterHandlers serves the logger levels over HTTP, as Ligato agents do:
// GET /log/list returns {"<logger>": "<level>"}; PUT /log/{logger}/{level} changes one.
func (r *LogRegistry) RegisterHandlers(reg HandlerRegistrar) {
	reg.HandleFunc("GET /log/list", func(w http.ResponseWriter, _ *http.Request) {
		writeLogJSON(w, http.StatusOK, r.Levels())
	})
	reg.HandleFunc("PUT /log/{logger}/{level}", func(w http.ResponseWriter, req *http.Request) {
		name, level := req.PathValue("logger"), req.PathValue("level")
		if err := r.SetLevel(name, level); err != nil {
			writeLogJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		r.Logger("agent").WithField("target", name).Infof("log level set to %s over REST", level)
		writeLogJSON(w, http.StatusOK, map[string]string{name: level})
	})
}

func writeLogJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
