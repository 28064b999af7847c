// strata-bench's command line without mpirun (bench::parse_options): every
// class of bad value -- negative, zero where it means nothing, too large,
// not a number, inf/nan, a stray word, an empty file name, a flag that does
// not apply -- is refused with a one-line UsageError naming the flag and the
// value, and the edges of each range are accepted. The end-to-end tests in
// meson.build run one case per class under mpirun (exit 2 on every rank,
// one line from rank 0).
#include <doctest/doctest.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "options.hpp"

namespace {

// parse_options over `args` (argv[0] added).
std::optional<bench::Options> parse(std::initializer_list<std::string> args) {
  std::vector<std::string> words{"strata-bench"};
  words.insert(words.end(), args);
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  std::string help;
  return bench::parse_options(static_cast<int>(argv.size()), argv.data(), &help);
}

// The refusal for `args`; fails the test when they are accepted.
std::string refusal(std::initializer_list<std::string> args) {
  try {
    parse(args);
  } catch (const bench::UsageError& e) {
    return e.what();
  }
  FAIL("accepted");
  return "";
}

struct Case {
  std::initializer_list<std::string> args;
  std::string says;  // the flag and the value, as the message must name them
};

void check_refused(std::initializer_list<Case> cases) {
  for (const Case& c : cases) {
    std::string line;
    for (const auto& a : c.args) line += a + " ";
    CAPTURE(line);
    const std::string message = refusal(c.args);
    CAPTURE(message);
    CHECK(message.find(c.says) != std::string::npos);
    CHECK(message.find('\n') == std::string::npos);
  }
}

}  // namespace

TEST_CASE("negative values, also where the flag is unsigned") {
  check_refused({
      {{"-f", "-2"}, "--stepfactor = '-2'"},
      {{"-n", "-1"}, "--iters = '-1'"},
      {{"-w", "-1"}, "--warmup_iters = '-1'"},
      {{"-r", "-1"}, "--root = '-1'"},
      {{"-b", "-5"}, "--minbytes = '-5'"},
      {{"-e", "-1k"}, "--maxbytes = '-1k'"},
      {{"-T", "-1"}, "--timeout = '-1'"},
      {{"--collective", "batch", "--model", "resnet50", "--bytes-per-pack", "-1"}, "--bytes-per-pack = '-1'"},
      {{"--collective", "batch", "--model", "resnet50", "--num-packs", "-3"}, "--num-packs = '-3'"},
  });
}

TEST_CASE("zero and one where they mean nothing") {
  check_refused({
      {{"-n", "0"}, "--iters = '0'"},
      {{"-f", "0", "-b", "8", "-e", "64"}, "--stepfactor = '0'"},
      {{"-f", "1", "-b", "8", "-e", "64"}, "--stepfactor = '1'"},  // would never reach -e
  });
}

TEST_CASE("too large for the flag or for its type") {
  check_refused({
      {{"-n", "1000001"}, "--iters = '1000001'"},
      {{"-n", "99999999999"}, "--iters = '99999999999'"},
      {{"-w", "1000001"}, "--warmup_iters = '1000001'"},
      {{"-r", "2147483648"}, "--root = '2147483648'"},
      {{"-f", "99999999999999999999"}, "--stepfactor = '99999999999999999999'"},
      {{"-e", "65537G"}, "--maxbytes = '65537G'"},
      {{"-b", "99999999999999999999"}, "--minbytes = '99999999999999999999'"},
      {{"-e", "18446744073709551615"}, "--maxbytes = '18446744073709551615'"},
      {{"--collective", "batch", "--model", "resnet50", "--num-packs", "2147483648"}, "--num-packs = '2147483648'"},
      {{"--collective", "batch", "--model", "resnet50", "--bytes-per-pack", "9223372036854775808"},
       "--bytes-per-pack = '9223372036854775808'"},
      {{"-T", "1e400"}, "--timeout = '1e400'"},
  });
}

TEST_CASE("not a number, or more than a number") {
  check_refused({
      {{"-n", "x"}, "--iters = 'x'"},
      {{"-n", "1.5"}, "--iters = '1.5'"},
      {{"-n", "0x10"}, "--iters = '0x10'"},
      {{"-n", " 3"}, "--iters = ' 3'"},
      {{"-n", "3 "}, "--iters = '3 '"},
      {{"-n", "+3"}, "--iters = '+3'"},
      {{"-n", ""}, "--iters = ''"},
      {{"-w", "1e3"}, "--warmup_iters = '1e3'"},
      {{"-f", "2.5"}, "--stepfactor = '2.5'"},
      {{"-r", "one"}, "--root = 'one'"},
      {{"-T", "abc"}, "--timeout = 'abc'"},
      {{"-T", "1s"}, "--timeout = '1s'"},
      {{"-T", ""}, "--timeout = ''"},
      {{"-b", "12q"}, "--minbytes = '12q'"},
      {{"-e", "1T"}, "--maxbytes = '1T'"},
      {{"-c", "2"}, "--check = '2'"},
      {{"--collective", "batch", "--model", "resnet50", "--bytes-per-pack", "1e3"}, "--bytes-per-pack = '1e3'"},
  });
}

TEST_CASE("inf and nan are no timeout") {
  check_refused({
      {{"-T", "inf"}, "--timeout = 'inf'"},
      {{"-T", "-inf"}, "--timeout = '-inf'"},
      {{"-T", "infinity"}, "--timeout = 'infinity'"},
      {{"-T", "nan"}, "--timeout = 'nan'"},
      {{"-T", "NaN"}, "--timeout = 'NaN'"},
  });
}

TEST_CASE("names that are not in the list") {
  check_refused({
      {{"-d", "f128"}, "--datatype = 'f128'"},
      {{"-o", "xor"}, "--op = 'xor'"},
      {{"--collective", "gather"}, "--collective = 'gather'"},
      {{"-m", "gpu"}, "--memory = 'gpu'"},
      {{"--baseline", "gloo"}, "--baseline = 'gloo'"},
      {{"--collective", "batch", "--model", "vgg"}, "--model = 'vgg'"},
      {{"--form", "async"}, "--form = 'async'"},
      {{"--form", "Persistent"}, "--form = 'Persistent'"},
  });
}

TEST_CASE("combinations that cannot run") {
  check_refused({
      {{"-b", "1M", "-e", "1k"}, "--minbytes = 1048576 is larger than --maxbytes = 1024"},
      {{"--collective", "batch"}, "--collective batch needs --model"},
      {{"--model", "resnet50"}, "--model only applies to --collective batch"},
      {{"--num-packs", "2"}, "--num-packs only applies to --collective batch"},
      {{"--bytes-per-pack", "4096"}, "--bytes-per-pack only applies to --collective batch"},
      {{"--collective", "batch", "--model", "resnet50", "--in-place"}, "--in-place"},
      {{"--baseline", "nccl"}, "--baseline nccl"},
      {{"--baseline", "mpi", "-d", "bf16"}, "--baseline mpi with --datatype bf16"},
      {{"--overlap"}, "--overlap needs a started call"},
      {{"--overlap", "--form", "blocking"}, "--overlap needs a started call"},
      {{"--overlap", "-m", "cuda"}, "or --memory cuda --stream-ordered"},
      {{"--stream-ordered"}, "--stream-ordered: a stream-ordered call takes CUDA tensors"},
      {{"--stream-ordered", "--overlap"}, "--stream-ordered: a stream-ordered call takes CUDA tensors"},
      {{"-m", "cuda", "--stream-ordered", "--form", "nonblocking"}, "--stream-ordered with --form nonblocking"},
      {{"-m", "cuda", "--stream-ordered", "--form", "persistent"}, "--stream-ordered with --form persistent"},
      {{"-m", "cuda", "--stream-ordered", "--overlap", "--overlap-compute", "spin"},
       "--overlap-compute chooses the host computation"},
      {{"-m", "cuda", "--stream-ordered", "--overlap-compute", "sleep"}, "--overlap-compute only applies to --overlap"},
      {{"--form", "persistent", "--collective", "batch", "--model", "resnet50"},
       "--form persistent with --collective batch"},
      {{"--offset", "4096"}, "--offset = '4096': expected an integer from 0 to 4095"},
      {{"--offset", "2"}, "--offset = 2 is not a whole number of f32 elements"},
      {{"--offset", "4", "-d", "f64"}, "--offset = 4 is not a whole number of f64 elements"},
      {{"--offset", "16", "-m", "cuda"}, "--offset applies to host memory only"},
  });
}

TEST_CASE("stray words, missing values, unknown flags, empty file names") {
  check_refused({
      {{"stray"}, "unexpected argument 'stray'"},
      {{"-n", "3", "64M"}, "unexpected argument '64M'"},
      {{"-n"}, "--iters"},
      {{"--no-such-flag"}, "--no-such-flag"},
      {{"--in-place=1"}, "--in-place"},
      {{"-J", ""}, "--json = ''"},
      {{"--csv", ""}, "--csv = ''"},
  });
}

TEST_CASE("the edges of every range are accepted") {
  auto o = parse({"-b", "0", "-e", "65536G", "-f", "70368744177664", "-n", "1000000", "-w", "1000000", "-r",
                  "2147483647", "-T", "1e9"});
  REQUIRE(o);
  CHECK(o->min_bytes == 0);
  CHECK(o->max_bytes == std::uint64_t{1} << 46);
  CHECK(o->step_factor == std::uint64_t{1} << 46);
  CHECK(o->iters == 1000000);
  CHECK(o->warmup == 1000000);
  CHECK(o->root == 2147483647);
  CHECK(o->timeout_seconds == 1e9);
  o = parse({"-f", "2", "-n", "1", "-w", "0", "-r", "0", "-T", "0.25", "-J", "out.json", "--csv", "out.csv"});
  REQUIRE(o);
  CHECK(o->step_factor == 2);
  CHECK(o->iters == 1);
  CHECK(o->warmup == 0);
  CHECK(o->timeout_seconds == 0.25);
  CHECK(o->json_path == "out.json");
  CHECK(o->csv_path == "out.csv");
  o = parse({"--collective", "batch", "--model", "resnet50", "--bytes-per-pack", "9223372036854775807",
             "--num-packs", "2147483647"});
  REQUIRE(o);
  CHECK(o->bytes_per_pack == 9223372036854775807LL);
  CHECK(o->num_packs == 2147483647);
  o = parse({"--offset", "4095", "-d", "u8"});
  REQUIRE(o);
  CHECK(o->offset == 4095);
  o = parse({"--offset", "0"});
  REQUIRE(o);
  CHECK(o->offset == 0);
}

TEST_CASE("a repeated flag takes its last value, also after a bad one") {
  // scripts/bench.sh puts its defaults first and the user's flags after.
  auto o = parse({"-n", "-1", "-n", "7", "-T", "inf", "-T", "2"});
  REQUIRE(o);
  CHECK(o->iters == 7);
  CHECK(o->timeout_seconds == 2);
}

TEST_CASE("forms, the progress thread and overlap") {
  auto o = parse({});
  REQUIRE(o);
  CHECK(o->form == bench::Form::blocking);
  CHECK_FALSE(o->progress_thread);
  CHECK_FALSE(o->overlap);
  o = parse({"--form", "persistent", "--overlap", "--progress-thread"});
  REQUIRE(o);
  CHECK(o->form == bench::Form::persistent);
  CHECK(o->progress_thread);
  CHECK(o->overlap);
  o = parse({"--form", "nonblocking", "--collective", "batch", "--model", "resnet50", "--overlap"});
  REQUIRE(o);
  CHECK(o->form == bench::Form::nonblocking);
  CHECK(bench::to_string(o->form) == "nonblocking");
  // The progress thread alone changes nothing about the form.
  o = parse({"--progress-thread"});
  REQUIRE(o);
  CHECK(o->form == bench::Form::blocking);
}

TEST_CASE("stream-ordered calls and their overlap") {
  auto o = parse({"-m", "cuda"});
  REQUIRE(o);
  CHECK_FALSE(o->stream_ordered);
  o = parse({"-m", "cuda", "--stream-ordered"});
  REQUIRE(o);
  CHECK(o->stream_ordered);
  CHECK(o->form == bench::Form::blocking);
  CHECK_FALSE(o->overlap);
  // The blocking form may be named; the overlap needs no started form.
  o = parse({"-m", "cuda", "--stream-ordered", "--form", "blocking", "--overlap", "--baseline", "nccl"});
  REQUIRE(o);
  CHECK(o->stream_ordered);
  CHECK(o->overlap);
  CHECK(o->baseline == bench::Baseline::nccl);
  // A started form on CUDA memory keeps the host computation.
  o = parse({"-m", "cuda", "--form", "nonblocking", "--overlap", "--overlap-compute", "sleep"});
  REQUIRE(o);
  CHECK_FALSE(o->stream_ordered);
  CHECK(o->overlap_sleep);
}
