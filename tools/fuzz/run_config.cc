// A run configuration: the YAML text (duplicate keys, anchors, any structure) and a --set
// assignment applied over it, as `h2oflex run CONFIG --set KEY=VALUE` does. Input: the --set
// before the first NUL byte (none when there is no NUL), the YAML after it.
#include "experiments/common/run_config.h"
#include "policy/yaml_fields.h"
#include "runtime/core/error.h"
#include "tools/fuzz/fuzz_target.h"

H2OFLEX_FUZZ_TARGET(run_config) {
  using namespace h2oflex;
  auto [first, second] = fuzz::split_at_nul(fuzz::as_text(data, size));
  const bool has_set = second.data() != nullptr;
  const std::string yaml(has_set ? second : first);
  try {
    YAML::Node root = policy::parse_yaml_text(yaml, "fuzz.yaml");
    if (!root.IsDefined() || root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
    if (has_set) apply_override(root, std::string(first));
    const RunConfig c = parse_run_config(root, "fuzz.yaml");
    (void)c.kv.capacity(c.prompt_len, c.gen_len);
  } catch (const InputError&) {
  }
  return 0;
}
