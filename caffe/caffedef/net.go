package caffedef

import (
	"fmt"
	"math"
	"os"
	"slices"

	"dsgd/caffe/prototxt"
	"dsgd/data"
	"dsgd/engine/layers"
	"dsgd/engine/model"
)

// NetDef is a parsed Caffe NetParameter: every layer of every phase, with
// its phase rules. Phase selects and validates one phase's net.
type NetDef struct {
	// Name is the net's name field.
	Name string
	// File is the file name the net was parsed from.
	File string
	// Layers holds every layer definition in file order; a legacy
	// net-level input comes first, as Caffe upgrades it.
	Layers []*LayerDef
	// Warnings lists the harmless fields that were ignored, each with its
	// position and the reason.
	Warnings []string
	// Notes says what was upgraded from an old format on reading (a V1
	// net), for the user to see, as Caffe logs its upgrades.
	Notes []string
	// State is the net's own state field: stages and level used when the
	// solver and the command give none.
	State NetState
	// ForceBackward is the net's force_backward: every layer computes its
	// gradients, whether or not they reach a loss.
	ForceBackward bool
}

// LayerDef is one layer definition of a NetDef. Exactly one of Compute and
// Data is set, unless the layer cannot be built (Err).
type LayerDef struct {
	Name, Type string
	Bottom     []string
	Top        []string
	// Include and Exclude are the layer's include and exclude rules; at
	// most one of them is non-empty, as Caffe requires.
	Include, Exclude []PhaseRule
	// Phase is the layer's own phase field when HasPhase: Caffe runs the
	// layer in it whatever its net's phase (nets Caffe writes out give
	// every layer one). dsgd builds such a layer only into a net of that
	// phase (PhaseState).
	Phase    layers.Phase
	HasPhase bool
	// Pos is where the layer definition starts.
	Pos prototxt.Pos
	// Compute is the layer's spec for a compute layer.
	Compute *model.LayerSpec
	// Data describes a data layer (Data, Input).
	Data *DataLayer
	// refused is why dsgd cannot build the layer (Err), after "layer
	// 'NAME' (PHASE phase) "; "" when it can.
	refused string
}

// Err says why dsgd cannot build the layer, nil when it can: a type dsgd
// does not know. Such a layer has neither Compute
// nor Data; it is read (its rules, bottoms and tops) so that a net whose
// rules leave it out builds, as in Caffe, which filters a net before it
// looks a type up, and PhaseState refuses a net that includes it with
// this error. The error is a *prototxt.Error at the layer.
func (l *LayerDef) Err() error {
	if l.refused == "" {
		return nil
	}
	return &prototxt.Error{Pos: l.Pos, Msg: fmt.Sprintf("layer '%s' %s", l.Name, l.refused)}
}

// PhaseRule is a Caffe NetStateRule: the phase, the level range and the
// stages a net's state must (or must not) have. A rule without a phase
// matches every phase.
type PhaseRule struct {
	Phase    layers.Phase
	HasPhase bool
	// MinLevel and MaxLevel bound the state's level when set.
	MinLevel, MaxLevel *int
	// Stages must all be in the state; NotStages none of them.
	Stages, NotStages []string
}

// matches is Caffe's Net::StateMeetsRule.
func (r PhaseRule) matches(p layers.Phase, st NetState) bool {
	switch {
	case r.HasPhase && r.Phase != p,
		r.MinLevel != nil && st.Level < *r.MinLevel,
		r.MaxLevel != nil && st.Level > *r.MaxLevel:
		return false
	}
	for _, s := range r.Stages {
		if !slices.Contains(st.Stages, s) {
			return false
		}
	}
	for _, s := range r.NotStages {
		if slices.Contains(st.Stages, s) {
			return false
		}
	}
	return true
}

// InPhase reports whether the layer is part of the net in phase p with no
// stages and level 0 (see InState).
func (l *LayerDef) InPhase(p layers.Phase) bool { return l.InState(p, NetState{}) }

// InState reports whether the layer is part of the net in phase p and
// state st, by Caffe's rules: with include rules, when any matches; with
// exclude rules, when none matches; with neither, always.
func (l *LayerDef) InState(p layers.Phase, st NetState) bool {
	if len(l.Include) > 0 {
		return slices.ContainsFunc(l.Include, func(r PhaseRule) bool { return r.matches(p, st) })
	}
	return !slices.ContainsFunc(l.Exclude, func(r PhaseRule) bool { return r.matches(p, st) })
}

// DataLayer is a layer that feeds the net from outside: Caffe's Data layer
// (a dataset read by source name) or Input layer (blobs of a fixed shape
// that the caller fills).
type DataLayer struct {
	Name string
	// Type is "Data", "ImageData", "HDF5Data", "WindowData",
	// "AnnotatedData" (SSD's), "DummyData" or "Input".
	Type string
	// Tops names the blobs the layer fills, in order ("data", "label").
	Tops []string
	// Source is data_param.source (image_data_param's, ...): the
	// dataset's name ("fashion-mnist", "cifar10") or path, as the data
	// package resolves it. It may be empty, for a source given elsewhere
	// (SourceErr).
	Source string
	// BatchSize is data_param.batch_size. Data only.
	BatchSize int
	// Shapes holds the shape of each top of an Input layer (input_param
	// shape dims, one shape per top).
	Shapes [][]int
	// Transform is the Data layer's transform_param, Caffe's defaults
	// applied (Scale 1).
	Transform data.TransformConfig
	// Caffe data layer settings beyond source and batch size: see
	// DataSettings.
	DataSettings
	// Pos is "file:line:col" of the layer definition.
	Pos string
	// noSource is why the layer cannot be read without a source given
	// elsewhere (SourceErr); nil when it has one or reads none.
	noSource *prototxt.Error
}

// SourceErr says why the layer cannot read its data, nil when it can: a
// Data, ImageData, HDF5Data or WindowData layer whose source is empty or
// absent. Caffe reads such a net (DIGITS writes one, for the tool to fill
// the source in) and fails only when the layer opens its source, so dsgd
// reads it too and refuses it where the data are opened, unless a source
// given there (dsgd's --data) stands in for the layer's. The error is a
// *prototxt.Error at the layer's parameters (data_param, ...).
func (dl *DataLayer) SourceErr() error {
	if dl.noSource == nil {
		return nil
	}
	return dl.noSource
}

// missingSource is dl's SourceErr, at pos, the position of ctx (the
// layer's data_param, ...): nil when dl has a source.
func missingSource(dl *DataLayer, pos prototxt.Pos, ctx string) *prototxt.Error {
	if dl.Source != "" {
		return nil
	}
	return &prototxt.Error{Pos: pos, Msg: ctx + " needs a source"}
}

// PhaseNet is the net of one phase: the compute layers as a model.Spec
// and the data layers that feed its Inputs.
type PhaseNet struct {
	Phase layers.Phase
	// Spec holds the compute layers; Spec.Inputs are the tops of Data, in
	// order.
	Spec model.Spec
	// Data holds the phase's data layers in definition order.
	Data []DataLayer
}

// LoadNet reads and parses the net prototxt at path.
func LoadNet(path string) (*NetDef, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: reading net: %w", err)
	}
	return ParseNet(path, src)
}

// ParseNet parses src, a Caffe NetParameter in text format read from the
// file filename (used in error positions). Every field dsgd does not
// support is an error naming the field and its position, except a few
// harmless ones that are ignored with an entry in Warnings. Errors with a
// position are *prototxt.Error.
func ParseNet(filename string, src []byte) (*NetDef, error) {
	msg, err := prototxt.Parse(filename, src)
	if err != nil {
		return nil, err
	}
	return parseNetMsg(filename, msg)
}

// parseNetMsg decodes a parsed NetParameter: a file's, or one written
// inline in a solver (net_param); filename names it in the result.
func parseNetMsg(filename string, msg *prototxt.Message) (*NetDef, error) {
	v0, v0notes, err := upgradeV0(msg)
	if err != nil {
		return nil, err
	}
	v1, err := upgradeV1(msg)
	if err != nil {
		return nil, err
	}
	d := &decoder{}
	r := d.reader(msg, "net")
	n := &NetDef{Name: r.str("name", ""), File: filename}
	if v0 {
		n.Notes = append(n.Notes, fmt.Sprintf("%s: upgraded from Caffe's V0 net format (before 2014) in memory, as Caffe does; "+
			"`dsgd upgrade %s NEW.prototxt` writes the current format", filename, filename))
		n.Notes = append(n.Notes, v0notes...)
	} else if v1 {
		n.Notes = append(n.Notes, fmt.Sprintf("%s: upgraded from Caffe's V1 net format in memory, as Caffe does; "+
			"`dsgd upgrade %s NEW.prototxt` writes the current format", filename, filename))
	}
	if in := legacyInput(r); in != nil {
		n.Layers = append(n.Layers, in)
	}
	r.ignore("debug_info", "dsgd does not print per-layer debug information")
	if m := r.msg("state"); m != nil {
		// A net's own state: its phase is overridden by the solver or the
		// command, as Caffe's are; its stages and level are the default.
		sr := d.reader(m, "state in net")
		sr.ignore("phase", "the command and the solver choose the phase", "TRAIN", "TEST")
		n.State = NetState{Level: sr.int("level", 0, -maxI32, maxI32), Stages: sr.strs("stage")}
		sr.finish()
	}
	if f := r.one("force_backward"); f != nil {
		n.ForceBackward = r.boolValue(f)
	}
	for _, f := range r.all("layer") {
		if !r.ok() {
			break
		}
		if f.Kind != prototxt.KindMessage {
			d.failf(f.ValuePos, "layer in net is a message: write layer { ... }")
			break
		}
		if l := decodeLayer(d, f); l != nil {
			n.Layers = append(n.Layers, l)
		}
	}
	r.finish()
	if d.err != nil {
		return nil, d.err
	}
	n.Warnings = d.sortedWarnings()
	return n, nil
}

// legacyInput turns the net-level input, input_shape and input_dim fields
// of old Caffe nets into an Input layer named "input", as Caffe's upgrade
// does; nil when there are none.
func legacyInput(r *reader) *LayerDef {
	inputs := r.all("input")
	shapeFields := r.m.Get("input_shape")
	shapes := r.msgs("input_shape")
	dims := r.all("input_dim")
	if len(inputs) == 0 {
		switch {
		case len(shapeFields) > 0:
			r.d.failf(shapeFields[0].Pos, "input_shape in net without any input")
		case len(dims) > 0:
			r.d.failf(dims[0].Pos, "input_dim in net without any input")
		}
		return nil
	}
	l := &LayerDef{Name: "input", Type: "Input", Pos: inputs[0].Pos}
	dl := &DataLayer{Name: "input", Type: "Input", Pos: inputs[0].Pos.String()}
	for _, f := range inputs {
		l.Top = append(l.Top, r.strValue(f))
	}
	switch {
	case len(shapes) > 0 && len(dims) > 0:
		r.d.failf(dims[0].Pos, "give input_shape or input_dim in net, not both")
	case len(shapes) > 0:
		if len(shapes) != len(inputs) {
			r.d.failf(inputs[0].Pos, "net has %d inputs but %d input_shape", len(inputs), len(shapes))
		}
		for _, m := range shapes {
			dl.Shapes = append(dl.Shapes, decodeShape(r.d, m, "input_shape in net"))
		}
	case len(dims) > 0:
		if len(dims) != 4*len(inputs) {
			r.d.failf(dims[0].Pos, "net has %d inputs, so it needs %d input_dim (4 each), not %d",
				len(inputs), 4*len(inputs), len(dims))
			return nil
		}
		for i := range inputs {
			shape := make([]int, 4)
			for j := range shape {
				shape[j] = int(r.intValue(dims[4*i+j], 1, math.MaxInt32))
			}
			checkCount(r.d, dims[4*i].Pos, "input_dim in net", shape)
			dl.Shapes = append(dl.Shapes, shape)
		}
	default:
		// Inputs without shapes declare no blob: Caffe's UpgradeNetInput
		// drops them (a legacy caffemodel's fields; cvjena/cnn-models'
		// AlexNet deploy.prototxt has one above its Input layer).
		for _, f := range inputs {
			r.d.warnings = append(r.d.warnings, warning{f.Pos, fmt.Sprintf(
				"%s: ignoring input %q in net: it has no input_shape or input_dim, so it declares no blob (Caffe drops it too)", f.Pos, f.Value)})
		}
		return nil
	}
	dl.Tops = l.Top
	l.Data = dl
	return l
}

// maxAxes is the most axes a Caffe blob may have (Caffe's kMaxBlobAxes).
const maxAxes = 32

// decodeShape decodes a BlobShape: 1 to 32 dims, each at least 1, whose
// product fits in an int32 as Caffe requires of a blob's count.
func decodeShape(d *decoder, m *prototxt.Message, ctx string) []int {
	r := d.reader(m, ctx)
	dims := r.ints("dim", 1, math.MaxInt32)
	switch {
	case !r.ok():
	case len(dims) == 0:
		d.failf(m.Pos, "%s has no dim", ctx)
	case len(dims) > maxAxes:
		d.failf(m.Pos, "%s has %d dims; a blob has at most %d", ctx, len(dims), maxAxes)
	default:
		checkCount(d, m.Pos, ctx, dims)
	}
	r.finish()
	return dims
}

// checkCount rejects a shape with more than 2^31-1 elements.
func checkCount(d *decoder, pos prototxt.Pos, ctx string, dims []int) {
	count := 1
	for _, v := range dims {
		count *= v
		if count > math.MaxInt32 {
			d.failf(pos, "%s: shape %v has more than 2^31-1 elements", ctx, dims)
			return
		}
	}
}

// decodeLayer decodes one layer { } message; nil after an error.
func decodeLayer(d *decoder, f *prototxt.Field) *LayerDef {
	r := d.reader(f.Msg, "layer")
	l := &LayerDef{Pos: f.Pos}
	l.Name = r.str("name", "")
	if l.Name == "" && r.ok() {
		// Caffe accepts a layer without a name; give it one that says
		// where it is, so errors and timings can name it.
		t := "layer"
		if tf := f.Msg.Get("type"); len(tf) == 1 && tf[0].Kind == prototxt.KindString && tf[0].Value != "" {
			t = tf[0].Value
		}
		l.Name = fmt.Sprintf("%s@%d", t, f.Pos.Line)
	}
	r.ctx = fmt.Sprintf("layer '%s'", l.Name)
	l.Type = r.str("type", "")
	if l.Type == "" && r.ok() {
		d.failf(f.Pos, "layer '%s' has no type", l.Name)
		return nil
	}
	l.Bottom = r.strs("bottom")
	l.Top = r.strs("top")
	if len(l.Top) == 0 && isLossType(l.Type) {
		// Caffe gives a loss layer without a top an anonymous one
		// (AutoTopBlobs), so that its loss still counts.
		l.Top = []string{"(automatic) " + l.Name}
	}
	for _, m := range r.msgs("include") {
		l.Include = append(l.Include, decodeRule(d, m, r.ctx, "include"))
	}
	for _, m := range r.msgs("exclude") {
		l.Exclude = append(l.Exclude, decodeRule(d, m, r.ctx, "exclude"))
	}
	if len(l.Include) > 0 && len(l.Exclude) > 0 {
		d.failf(f.Pos, "layer '%s' has both include and exclude rules; Caffe allows only one kind", l.Name)
	}
	if r.has("phase") {
		l.HasPhase, l.Phase = true, layers.Phase(r.enum("phase", 0, "TRAIN", "TEST"))
	}
	if !r.ok() {
		return nil
	}
	if why := unbuildable(l.Type, f.Msg); why != "" {
		// Caffe filters a net by its rules (FilterNet) before it looks a
		// layer's type up: a layer no net includes is never refused. So
		// its rules are read, and the refusal waits for PhaseState.
		l.refused = why
		r.skip()
		return l
	}
	r.unsupported("blobs", "dsgd initialises params with fillers and restores them from snapshots")
	if !r.ok() {
		return nil
	}
	switch {
	case slices.Contains(dataTypes, l.Type):
		l.Data = decodeDataLayer(r, l)
	default:
		spec := &model.LayerSpec{Name: l.Name, Bottom: l.Bottom, Top: l.Top, Pos: f.Pos.String()}
		spec.Params = decodeParams(r)
		spec.LossWeight = r.float32s("loss_weight")
		if len(spec.LossWeight) > 0 && len(spec.LossWeight) != len(l.Top) && r.ok() {
			d.failf(f.Pos, "layer '%s' has %d loss_weight for %d tops; give one per top or none",
				l.Name, len(spec.LossWeight), len(l.Top))
		}
		spec.PropagateDown = r.bools("propagate_down")
		if len(spec.PropagateDown) > 0 && len(spec.PropagateDown) != len(l.Bottom) && r.ok() {
			d.failf(f.Pos, "layer '%s' has %d propagate_down for %d bottoms; give one per bottom or none",
				l.Name, len(spec.PropagateDown), len(l.Bottom))
		}
		l.Compute = spec // its propagate_down is read by MultiBoxLoss's decoder
		spec.Config = decodeCompute(r, l)
	}
	r.finishLayer(l.Type)
	if d.err != nil {
		return nil
	}
	return l
}

// dataTypes are the data layer types dsgd reads (DataLayer).
var dataTypes = []string{"Data", "Input", "ImageData", "HDF5Data", "DummyData", "WindowData", "MemoryData", "AnnotatedData"}

// unbuildable says why dsgd cannot build a layer of type typ, whose
// LayerParameter is m (a type dsgd does not know),
// for the error PhaseState gives after "layer 'NAME' (PHASE phase) "; ""
// when it can.
func unbuildable(typ string, m *prototxt.Message) string {
	switch {
	case slices.Contains(dataTypes, typ), slices.Contains(computeTypes(), typ):
		return ""
	}
	return fmt.Sprintf("has unknown type '%s'%s; dsgd supports %s", typ, forkNote(typ), supportedTypes())
}

// decodeRule decodes a NetStateRule.
func decodeRule(d *decoder, m *prototxt.Message, layerCtx, kind string) PhaseRule {
	r := d.reader(m, kind+" of "+layerCtx)
	var rule PhaseRule
	if r.has("phase") {
		rule.HasPhase = true
		rule.Phase = layers.Phase(r.enum("phase", 0, "TRAIN", "TEST"))
	}
	for _, lv := range []struct {
		name string
		dst  **int
	}{{"min_level", &rule.MinLevel}, {"max_level", &rule.MaxLevel}} {
		if f := r.one(lv.name); f != nil {
			v := int(r.intValue(f, -maxI32, maxI32))
			*lv.dst = &v
		}
	}
	rule.Stages = r.strs("stage")
	rule.NotStages = r.strs("not_stage")
	r.finish()
	return rule
}

// decodeParams decodes the layer's param { } blocks.
func decodeParams(r *reader) []model.ParamSpec {
	var out []model.ParamSpec
	for _, m := range r.msgs("param") {
		pr := r.d.reader(m, "param of "+r.ctx)
		p := model.ParamSpec{
			Name:      pr.str("name", ""),
			LRSet:     pr.has("lr_mult"),
			DecaySet:  pr.has("decay_mult"),
			LRMult:    pr.float32("lr_mult", 1),
			DecayMult: pr.float32("decay_mult", 1),
		}
		if f := pr.one("share_mode"); f != nil {
			p.Permissive = pr.enumValue(f, "STRICT", "PERMISSIVE") == 1
		}
		pr.finish()
		out = append(out, p)
	}
	return out
}

// decodeDataLayer decodes a Data or Input layer.
func decodeDataLayer(r *reader, l *LayerDef) *DataLayer {
	dl := &DataLayer{Name: l.Name, Type: l.Type, Tops: l.Top, Pos: l.Pos.String()}
	if len(l.Bottom) > 0 {
		r.d.failf(l.Pos, "%s layer '%s' takes no bottom", l.Type, l.Name)
		return nil
	}
	const why = "a data layer has no params and no loss"
	r.unsupported("param", why)
	r.unsupported("loss_weight", why)
	r.unsupported("propagate_down", why)
	switch l.Type {
	case "ImageData", "HDF5Data", "WindowData":
		decodeFileData(r, l, dl)
	case "Data":
		if len(l.Top) < 1 || len(l.Top) > 2 {
			r.d.failf(l.Pos, "Data layer '%s' has %d tops; it needs 1 or 2 (data, label)", l.Name, len(l.Top))
			return nil
		}
		dl.Transform = decodeTransform(r, dl)
		decodeDataParam(r, l, dl, func(dr *reader) { dl.RandSkip = dr.int("rand_skip", 0, 0, math.MaxInt32) })
	case "AnnotatedData":
		decodeAnnotatedData(r, l, dl)
	case "DummyData":
		decodeDummyData(r, l, dl)
	case "MemoryData":
		decodeMemoryData(r, l, dl)
	case "Input":
		if len(l.Top) == 0 {
			r.d.failf(l.Pos, "Input layer '%s' has no top", l.Name)
			return nil
		}
		m := r.msg("input_param")
		if m == nil {
			if r.ok() {
				r.d.failf(l.Pos, "Input layer '%s' needs input_param { shape { dim ... } }", l.Name)
			}
			return nil
		}
		ir := r.d.reader(m, "input_param of "+r.ctx)
		for _, s := range ir.msgs("shape") {
			dl.Shapes = append(dl.Shapes, decodeShape(r.d, s, "shape in input_param of "+r.ctx))
		}
		ir.finish()
		switch {
		case !r.ok():
		case len(dl.Shapes) == 1:
			for len(dl.Shapes) < len(l.Top) {
				dl.Shapes = append(dl.Shapes, slices.Clone(dl.Shapes[0]))
			}
		case len(dl.Shapes) != len(l.Top):
			r.d.failf(m.Pos, "input_param of %s has %d shapes for %d tops; give one shape, or one per top",
				r.ctx, len(dl.Shapes), len(l.Top))
		}
	}
	return dl
}

// decodeTransform decodes the optional transform_param.
func decodeTransform(r *reader, dl *DataLayer) data.TransformConfig {
	t := data.TransformConfig{Scale: 1}
	m := r.msg("transform_param")
	if m == nil {
		return t
	}
	tr := r.d.reader(m, "transform_param of "+r.ctx)
	if f := tr.one("scale"); f != nil {
		t.Scale = float32(tr.floatValue(f, true))
		if t.Scale == 0 && tr.ok() {
			tr.valueErr(f, "must not be 0")
		}
	}
	t.MeanFile = tr.str("mean_file", "")
	t.MeanValue = tr.float32s("mean_value")
	if t.MeanFile != "" && len(t.MeanValue) > 0 && tr.ok() {
		r.d.failf(m.Pos, "transform_param of %s gives both mean_file and mean_value; Caffe allows one", r.ctx)
	}
	t.CropSize = tr.int("crop_size", 0, 0, math.MaxInt32)
	t.Mirror = tr.bool("mirror", false)
	if tr.bool("force_color", false) {
		dl.Channels = 3
	}
	if tr.bool("force_gray", false) {
		if dl.Channels == 3 && tr.ok() {
			r.d.failf(m.Pos, "transform_param of %s sets both force_color and force_gray", r.ctx)
		}
		dl.Channels = 1
	}
	tr.finish()
	return t
}

// Phase returns the net of phase p: the layers whose rules include them in
// p, split into data layers and a model.Spec of compute layers. It checks
// the graph as Caffe does when it builds the net: every bottom is produced
// by an earlier layer, and no blob is produced twice except by a layer
// computing in place (top i named as bottom i). Like Caffe, it lets layers
// share a name (mnist_autoencoder's two "loss" layers); model.Build
// refuses a shared name only where a layer holding it has parameters.
// Errors name the layer, its position and the phase.
//
// The returned Spec's layer configs are shared with n and with other
// phases' Specs: treat them as read-only.
func (n *NetDef) Phase(p layers.Phase) (*PhaseNet, error) { return n.PhaseState(p, NetState{}) }

// PhaseState is Phase with the stages and level of st (Caffe's NetState)
// also selecting layers.
func (n *NetDef) PhaseState(p layers.Phase, st NetState) (*PhaseNet, error) {
	pn := &PhaseNet{Phase: p, Spec: model.Spec{Name: n.Name, ForceBackward: n.ForceBackward}}
	blobs := map[string]bool{}
	own := map[string]bool{} // the current layer's tops
	for _, l := range n.Layers {
		if !l.InState(p, st) {
			continue
		}
		if l.refused != "" {
			return nil, &prototxt.Error{Pos: l.Pos, Msg: fmt.Sprintf("layer '%s' (%s phase) %s", l.Name, p, l.refused)}
		}
		if l.HasPhase && l.Phase != p {
			return nil, &prototxt.Error{Pos: l.Pos, Msg: fmt.Sprintf(
				"layer '%s' (%s phase) sets phase: %s, in which Caffe would run it inside this %s net; dsgd runs every layer in its net's phase: "+
					"remove the field, or select the layer by phase with include { phase: %s }", l.Name, p, l.Phase, p, l.Phase)}
		}
		for _, b := range l.Bottom {
			if !blobs[b] {
				return nil, &prototxt.Error{Pos: l.Pos, Msg: fmt.Sprintf(
					"layer '%s' (%s phase): bottom '%s' is not produced by any earlier layer in this phase", l.Name, p, b)}
			}
		}
		clear(own)
		for i, t := range l.Top {
			if own[t] {
				return nil, &prototxt.Error{Pos: l.Pos, Msg: fmt.Sprintf(
					"layer '%s' (%s phase): top '%s' is listed twice", l.Name, p, t)}
			}
			inPlace := i < len(l.Bottom) && l.Bottom[i] == t
			if blobs[t] && !inPlace {
				return nil, &prototxt.Error{Pos: l.Pos, Msg: fmt.Sprintf(
					"layer '%s' (%s phase): top '%s' is already produced by an earlier layer; "+
						"only a layer computing in place (top %d = bottom %d) may reuse it", l.Name, p, t, i, i)}
			}
			blobs[t] = true
			own[t] = true
		}
		if l.Data != nil {
			pn.Data = append(pn.Data, *l.Data)
			pn.Spec.Inputs = append(pn.Spec.Inputs, l.Data.Tops...)
			continue
		}
		pn.Spec.Layers = append(pn.Spec.Layers, *l.Compute)
	}
	return pn, nil
}

// decodeDataParam reads the data_param of a Data or AnnotatedData layer
// (source, batch_size, backend; prefetch ignored, the old transform
// fields refused) into dl; randSkip reads rand_skip, which the two read
// differently. A missing data_param or batch_size is an error at its line.
func decodeDataParam(r *reader, l *LayerDef, dl *DataLayer, randSkip func(*reader)) {
	m := r.msg("data_param")
	if m == nil {
		if r.ok() {
			r.d.failf(l.Pos, "%s layer '%s' needs data_param { source batch_size }", l.Type, l.Name)
		}
		return
	}
	dr := r.d.reader(m, "data_param of "+r.ctx)
	dl.Source = dr.str("source", "")
	dl.BatchSize = dr.int("batch_size", 0, 1, math.MaxInt32)
	dl.Backend = []string{"LEVELDB", "LMDB"}[max(0, dr.enum("backend", 0, "LEVELDB", "LMDB"))]
	dr.ignore("prefetch", "dsgd's loaders prefetch on their own")
	randSkip(dr)
	const old = "use transform_param in the layer instead"
	for _, name := range []string{"scale", "mean_file", "crop_size", "mirror", "force_encoded_color"} {
		dr.unsupported(name, old)
	}
	if dr.ok() {
		if dl.BatchSize == 0 {
			r.d.failf(m.Pos, "data_param of %s needs a batch_size", r.ctx)
		}
		dl.noSource = missingSource(dl, m.Pos, "data_param of "+r.ctx)
	}
	dr.finish()
}
