// RUN: meshc-opt %s -split-input-file -verify-diagnostics
// Errors of mtf.program and of the mtf.layout attribute.

mtf.program @p {
  // expected-note @+1 {{size 8 here}}
  %x = mtf.input "x" : !mtf.tensor<[batch=8], f32>
  // expected-error @+1 {{'mtf.input' op dimension 'batch' has size 16 here but 8 elsewhere in the program}}
  %y = mtf.input "y" : !mtf.tensor<[batch=16], f32>
}

// -----

mtf.program @p {
  // expected-note @+1 {{first used here}}
  %x = mtf.input "x" : !mtf.tensor<[batch=8], f32>
  // expected-error @+1 {{'mtf.param' op input/parameter name 'x' is used twice}}
  %w = mtf.param "x" zeros : !mtf.tensor<[batch=8], f32>
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[batch=8], f32>
  // expected-note @+1 {{first used here}}
  mtf.output "out" %x : !mtf.tensor<[batch=8], f32>
  // expected-error @+1 {{'mtf.output' op output name 'out' is used twice}}
  mtf.output "out" %x : !mtf.tensor<[batch=8], f32>
}

// -----

mtf.program @p {
  %l = mtf.input "l" : !mtf.tensor<[], f32>
  // expected-note @+1 {{first mtf.train here}}
  mtf.train %l with "sgd" {lr = 1.0 : f64} : !mtf.tensor<[], f32>
  // expected-error @+1 {{'mtf.train' op a program trains one loss at most}}
  mtf.train %l with "sgd" {lr = 1.0 : f64} : !mtf.tensor<[], f32>
}

// -----

mtf.program @p {
  // expected-error @+1 {{'mtf.layout' must be a #mtf.layout, got "batch:b"}}
  %x = mtf.input "x" {mtf.layout = "batch:b"} : !mtf.tensor<[batch=8], f32>
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[batch=8], f32>
  // expected-error @+1 {{'mtf.layout' needs an op with one !mtf.tensor result}}
  mtf.output "x" %x {mtf.layout = #mtf.layout<>} : !mtf.tensor<[batch=8], f32>
}

// -----

mtf.program @p {
  // expected-error @+1 {{unknown mtf attribute 'mtf.sharding'}}
  %x = mtf.input "x" {mtf.sharding = 1} : !mtf.tensor<[batch=8], f32>
}

// -----

mtf.program @p mesh <b=2> {
  // expected-error @+1 {{layout splits dimension 'seq' which the tensor does not have (type '!mtf.tensor<[batch=8], f32>')}}
  %x = mtf.input "x" {mtf.layout = #mtf.layout<seq: b>} : !mtf.tensor<[batch=8], f32>
}

// -----

mtf.program @p mesh <b=2> {
  // expected-error @+1 {{layout uses mesh axis 'm' which mesh #mtf.mesh<b=2> does not have}}
  %x = mtf.input "x" {mtf.layout = #mtf.layout<batch: m>} : !mtf.tensor<[batch=8], f32>
}

// -----

mtf.program @p mesh <b=2, m=3> {
  // expected-error @+1 {{dimension 'batch' (size 8) is not divisible by its 6 shards}}
  %x = mtf.input "x" {mtf.layout = #mtf.layout<batch: b+m>} : !mtf.tensor<[batch=8], f32>
}

// -----

// The weights' attributes belong on a program, with their types.
// expected-error @+1 {{'mtf.axis_weights' must be a string on an mtf.program}}
mtf.program @p mesh <b=3> attributes {mtf.axis_weights = 3 : i64} {
}

// -----

// expected-error @+1 {{'mtf.uneven' must be a unit attribute on an mtf.program}}
mtf.program @p mesh <b=3> attributes {mtf.uneven = "yes"} {
}

// -----

mtf.program @p mesh <b=3> {
  // expected-error @+1 {{'mtf.uneven' must be a unit attribute on an mtf.program}}
  %x = mtf.input "x" {mtf.uneven} : !mtf.tensor<[batch=8], f32>
}

// -----

// With mtf.uneven, a split need not divide (the layout library cuts it).
mtf.program @p mesh <b=3> attributes {mtf.uneven} {
  %x = mtf.input "x" {mtf.layout = #mtf.layout<batch: b>} : !mtf.tensor<[batch=8], f32>
}

// -----

// mtf.blocks: per unequal dim, its axes and one size per shard, the largest
// the result's size.
mtf.program @p mesh <b=3> local attributes {mtf.axis_weights = "b=1,1,2"} {
  %x = mtf.input "x" {mtf.blocks = {batch = {axes = ["b"], sizes = array<i64: 2, 2, 4>}}} : !mtf.tensor<[batch=4], f32>
}

// -----

mtf.program @p mesh <b=3> local attributes {mtf.axis_weights = "b=1,1,2"} {
  // expected-error @+1 {{'mtf.blocks' entry 'batch' needs 3 sizes of at least 0, one per shard, got array<i64: 2, 6>}}
  %x = mtf.input "x" {mtf.blocks = {batch = {axes = ["b"], sizes = array<i64: 2, 6>}}} : !mtf.tensor<[batch=6], f32>
}

// -----

mtf.program @p mesh <b=3> local attributes {mtf.axis_weights = "b=1,1,2"} {
  // expected-error @+1 {{'mtf.blocks' entry 'batch' names "q", which is not an axis of the program's mesh}}
  %x = mtf.input "x" {mtf.blocks = {batch = {axes = ["q"], sizes = array<i64: 2, 2, 4>}}} : !mtf.tensor<[batch=4], f32>
}

// -----

mtf.program @p mesh <b=3> local attributes {mtf.axis_weights = "b=1,1,2"} {
  // expected-error @+1 {{'mtf.blocks' entry 'batch' does not match the result type '!mtf.tensor<[batch=8], f32>', which must hold the largest block (4)}}
  %x = mtf.input "x" {mtf.blocks = {batch = {axes = ["b"], sizes = array<i64: 2, 2, 4>}}} : !mtf.tensor<[batch=8], f32>
}

// -----

mtf.program @p mesh <b=3> local {
  // expected-error @+1 {{'mtf.blocks' entry 'batch' must be {axes = [mesh axes], sizes = array<i64>}}}
  %x = mtf.input "x" {mtf.blocks = {batch = [2, 2, 4]}} : !mtf.tensor<[batch=4], f32>
}

// -----

mtf.program @p mesh <b=3> local {
  // expected-error @+1 {{'mtf.blocks' entry 'batch' lists mesh axis "b" twice}}
  %x = mtf.input "x" {mtf.blocks = {batch = {axes = ["b", "b"], sizes = array<i64: 1, 1, 1, 1, 1, 1, 1, 1, 1>}}} : !mtf.tensor<[batch=1], f32>
}

// -----

mtf.program @p mesh <b=3> local {
  // expected-error @+1 {{'mtf.blocks' must be a dictionary on an op with results}}
  %x = mtf.input "x" {mtf.blocks = [1, 2]} : !mtf.tensor<[batch=4], f32>
}

// -----

// expected-error @+1 {{'mtf.layout_aliases' must map dim names to a dim name or a list of them on an mtf.program, got {layers_stage = 3 : i64}}}
mtf.program @p attributes {mtf.layout_aliases = {layers_stage = 3}} {
}

// -----

// expected-error @+1 {{'mtf.layout_aliases' must map dim names to a dim name or a list of them on an mtf.program, got {batch_mb = []}}}
mtf.program @p attributes {mtf.layout_aliases = {batch_mb = []}} {
}

// -----

// expected-error @+1 {{'mtf.pipelines' must map layer dims to {stages, per_stage, microbatches, ticks} (each at least 1; with uneven stages, blocks: the layers of each, at most per_stage; schedule: "gpipe", "1f1b" or "interleaved"; virtual_stages: at least 2) on an mtf.program, got {layers = {microbatches = 2 : i64, per_stage = 3 : i64, stages = 0 : i64, ticks = 1 : i64}}}}
mtf.program @p attributes {mtf.pipelines = {layers = {stages = 0, per_stage = 3, microbatches = 2, ticks = 1}}} {
}

// -----

// expected-error @+1 {{'mtf.pipelines' must map layer dims to {stages, per_stage, microbatches, ticks} (each at least 1; with uneven stages, blocks: the layers of each, at most per_stage; schedule: "gpipe", "1f1b" or "interleaved"; virtual_stages: at least 2) on an mtf.program, got {layers = {blocks = array<i64: 2, 3>, microbatches = 2 : i64, per_stage = 2 : i64, stages = 2 : i64, ticks = 3 : i64}}}}
mtf.program @p attributes {mtf.pipelines = {layers = {stages = 2, per_stage = 2, microbatches = 2, ticks = 3, blocks = array<i64: 2, 3>}}} {
}

// -----

// expected-error @+1 {{'mtf.pipelines' must map layer dims to {stages, per_stage, microbatches, ticks} (each at least 1; with uneven stages, blocks: the layers of each, at most per_stage; schedule: "gpipe", "1f1b" or "interleaved"; virtual_stages: at least 2) on an mtf.program, got {layers = {microbatches = 2 : i64, per_stage = 3 : i64, schedule = "zb", stages = 2 : i64, ticks = 3 : i64}}}}
mtf.program @p attributes {mtf.pipelines = {layers = {stages = 2, per_stage = 3, microbatches = 2, ticks = 3, schedule = "zb"}}} {
}

// -----

// expected-error @+1 {{'mtf.one_f_one_b' must be {stages = P, microbatches = M, stage = "dim", entries = N} with P >= 2, M >= 1 and N at most the stacked operands on an mtf.loop, got {entries = 0 : i64, microbatches = 2 : i64, stage = "layers_stage", stages = 2 : i64}}}
mtf.program @p attributes {mtf.one_f_one_b = {stages = 2, microbatches = 2, stage = "layers_stage", entries = 0}} {
}

// -----

// expected-error @+1 {{'mtf.pipelines' must map layer dims to {stages, per_stage, microbatches, ticks} (each at least 1; with uneven stages, blocks: the layers of each, at most per_stage; schedule: "gpipe", "1f1b" or "interleaved"; virtual_stages: at least 2) on an mtf.program, got {layers = {microbatches = 2 : i64, per_stage = 1 : i64, schedule = "interleaved", stages = 2 : i64, ticks = 3 : i64, virtual_stages = 1 : i64}}}}
mtf.program @p attributes {mtf.pipelines = {layers = {stages = 2, per_stage = 1, microbatches = 2, ticks = 3, schedule = "interleaved", virtual_stages = 1}}} {
}

// -----

// expected-error @+1 {{'mtf.model_dims' must map a model dim name to the list of at least two dim names it is cut into on an mtf.program, got {layers = ["layers_stage"]}}}
mtf.program @p attributes {mtf.model_dims = {layers = ["layers_stage"]}} {
}
