// ResNet-50, BERT-large and GPT-2 small, built layer by layer from their
// architecture hyper-parameters. The tensor order is the reference
// implementation's parameter order, which is what a data-parallel framework
// hands to its all-reduce (reversed or bucketed, but the same tensors).
//
// Resulting sizes (checked against the published parameter counts):
//   resnet50    161 tensors,  25,557,032 parameters (torchvision: 25.6M)
//   bert-large  391 tensors, 335,141,888 parameters (paper: 340M; HF: 335M)
//   gpt2-small  148 tensors, 124,439,808 parameters (HF GPT2Model: 124M)
#include "models.hpp"

#include <fmt/format.h>

#include <array>
#include <functional>

namespace bench {
namespace {

class Builder {
 public:
  explicit Builder(std::vector<ParameterTensor>& out) : out_(out) {}
  void add(std::string name, std::size_t count) { out_.push_back({std::move(name), count}); }
  // A dense layer as y = xW + b: weight in*out, bias out.
  void linear(const std::string& name, std::size_t in, std::size_t out, bool bias = true) {
    add(name + ".weight", in * out);
    if (bias) add(name + ".bias", out);
  }
  // Normalisation layers learn a scale and a shift per channel (BatchNorm's
  // running mean/variance are buffers, not gradients, so they are not here).
  void norm(const std::string& name, std::size_t channels) {
    add(name + ".weight", channels);
    add(name + ".bias", channels);
  }
  void conv(const std::string& name, std::size_t in, std::size_t out, std::size_t k) {
    add(name + ".weight", out * in * k * k);  // ResNet convolutions have no bias
  }

 private:
  std::vector<ParameterTensor>& out_;
};

// He et al., "Deep Residual Learning for Image Recognition" (2015), Table 1,
// 50-layer column; torchvision.models.resnet50 (bottleneck v1.5: the stride
// sits on the 3x3 conv, which does not change any shape).
std::vector<ParameterTensor> resnet50() {
  std::vector<ParameterTensor> t;
  Builder b(t);
  b.conv("conv1", 3, 64, 7);
  b.norm("bn1", 64);
  const std::array<std::size_t, 4> blocks = {3, 4, 6, 3}, widths = {64, 128, 256, 512};
  constexpr std::size_t expansion = 4;
  std::size_t in = 64;
  for (std::size_t layer = 0; layer < 4; ++layer) {
    const std::size_t w = widths[layer];
    for (std::size_t block = 0; block < blocks[layer]; ++block) {
      const std::string p = fmt::format("layer{}.{}.", layer + 1, block);
      b.conv(p + "conv1", in, w, 1);
      b.norm(p + "bn1", w);
      b.conv(p + "conv2", w, w, 3);
      b.norm(p + "bn2", w);
      b.conv(p + "conv3", w, w * expansion, 1);
      b.norm(p + "bn3", w * expansion);
      if (block == 0) {  // projection shortcut where the shape changes
        b.conv(p + "downsample.0", in, w * expansion, 1);
        b.norm(p + "downsample.1", w * expansion);
      }
      in = w * expansion;
    }
  }
  b.linear("fc", in, 1000);
  return t;
}

// Devlin et al., "BERT" (2018): BERT-large L=24, H=1024, A=16, feed-forward
// 4H, WordPiece vocabulary 30,522, 512 positions, 2 segment types;
// HuggingFace BertModel (encoder + pooler; the pre-training heads tie their
// big matrix to the word embeddings and are left out).
std::vector<ParameterTensor> bert_large() {
  constexpr std::size_t layers = 24, hidden = 1024, ff = 4 * hidden, vocab = 30522, positions = 512, types = 2;
  std::vector<ParameterTensor> t;
  Builder b(t);
  b.add("embeddings.word_embeddings.weight", vocab * hidden);
  b.add("embeddings.position_embeddings.weight", positions * hidden);
  b.add("embeddings.token_type_embeddings.weight", types * hidden);
  b.norm("embeddings.LayerNorm", hidden);
  for (std::size_t l = 0; l < layers; ++l) {
    const std::string p = fmt::format("encoder.layer.{}.", l);
    b.linear(p + "attention.self.query", hidden, hidden);
    b.linear(p + "attention.self.key", hidden, hidden);
    b.linear(p + "attention.self.value", hidden, hidden);
    b.linear(p + "attention.output.dense", hidden, hidden);
    b.norm(p + "attention.output.LayerNorm", hidden);
    b.linear(p + "intermediate.dense", hidden, ff);
    b.linear(p + "output.dense", ff, hidden);
    b.norm(p + "output.LayerNorm", hidden);
  }
  b.linear("pooler.dense", hidden, hidden);
  return t;
}

// Radford et al., "Language Models are Unsupervised Multitask Learners"
// (2019), the 117M/124M model: 12 layers, d=768, 12 heads, context 1024,
// BPE vocabulary 50,257; HuggingFace GPT2Model (the LM head is tied to wte).
std::vector<ParameterTensor> gpt2_small() {
  constexpr std::size_t layers = 12, d = 768, context = 1024, vocab = 50257;
  std::vector<ParameterTensor> t;
  Builder b(t);
  b.add("wte.weight", vocab * d);
  b.add("wpe.weight", context * d);
  for (std::size_t l = 0; l < layers; ++l) {
    const std::string p = fmt::format("h.{}.", l);
    b.norm(p + "ln_1", d);
    b.linear(p + "attn.c_attn", d, 3 * d);  // fused Q, K, V
    b.linear(p + "attn.c_proj", d, d);
    b.norm(p + "ln_2", d);
    b.linear(p + "mlp.c_fc", d, 4 * d);
    b.linear(p + "mlp.c_proj", 4 * d, d);
  }
  b.norm("ln_f", d);
  return t;
}

struct Entry {
  std::string_view name, source;
  std::function<std::vector<ParameterTensor>()> build;
};

const std::array<Entry, 3> kModels = {{
    {"resnet50", "He et al. 2015 (ResNet-50, Table 1); torchvision resnet50", resnet50},
    {"bert-large", "Devlin et al. 2018 (BERT-large, L=24 H=1024 A=16); HuggingFace BertModel", bert_large},
    {"gpt2-small", "Radford et al. 2019 (GPT-2 124M, 12x768); HuggingFace GPT2Model", gpt2_small},
}};

}  // namespace

std::size_t Model::parameters() const {
  std::size_t total = 0;
  for (const auto& t : tensors) total += t.count;
  return total;
}

const Model* find_model(std::string_view name) {
  // Built on first use and kept: the lists are small (a few hundred entries).
  static std::vector<Model> models = [] {
    std::vector<Model> m;
    for (const auto& e : kModels) m.push_back({e.name, e.source, e.build()});
    return m;
  }();
  for (const auto& m : models)
    if (m.name == name) return &m;
  return nullptr;
}

std::string model_names() {
  std::string names;
  for (const auto& e : kModels) names += fmt::format("{}{}", names.empty() ? "" : ", ", e.name);
  return names;
}

}  // namespace bench
