// Weights on 'b' do not let the even axis 'm' cut batch=6 (meshc's
// mtf-apply-layout would refuse it; axis-weights.test checks that
// mtf-partition does too for IR written by hand).
module {
  mtf.program @mismatch mesh <b=3, m=4> attributes {mtf.axis_weights = "b=1,1,2"} {
    %0 = mtf.input "x" {mtf.layout = #mtf.layout<batch: m>} : !mtf.tensor<[batch=6, io=4], f32>
    %1 = mtf.relu %0 {mtf.layout = #mtf.layout<batch: m>} : !mtf.tensor<[batch=6, io=4], f32>
    mtf.output "y" %1 : !mtf.tensor<[batch=6, io=4], f32>
  }
}
