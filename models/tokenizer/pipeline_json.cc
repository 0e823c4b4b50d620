#include "models/tokenizer/pipeline_json.h"

#include <limits>
#include <memory>

#include "models/tokenizer/utf8.h"

namespace h2oflex::tokenizer {
namespace {

using nlohmann::json;

std::string type_of(const json& value, const JsonWhere& where) {
  if (!value.is_object()) where.fail("expected an object with a 'type', got " + shown(value));
  return string_field(value, "type", where);
}

[[noreturn]] void unsupported_type(const std::string& type, const JsonWhere& where,
                                   const char* supported) {
  where.at("type").fail("unsupported type '" + type + "' (this implementation reads " + supported +
                        ")");
}

const json& array_field(const json& value, const char* key, const JsonWhere& where) {
  const json& list = field(value, key);
  if (!list.is_array()) where.at(key).fail("expected an array, got " + shown(list));
  return list;
}

// A pattern object {"String": text}; a {"Regex": ...} pattern is refused.
std::string string_pattern(const json& value, const JsonWhere& where) {
  const JsonWhere at = where.at("pattern");
  const json& pattern = field(value, "pattern");
  if (pattern.is_object() && pattern.contains("String")) return string_field(pattern, "String", at);
  at.fail("expected {\"String\": ...} (regular expression patterns are not supported here), got " +
          shown(pattern));
}

// A string holding exactly one character, such as Metaspace's "▁".
std::string one_character(const json& value, const char* key, const JsonWhere& where) {
  const std::string s = string_field(value, key, where);
  if (s.empty() || decode_utf8_at(s, 0).length != s.size() || !decode_utf8_at(s, 0).valid) {
    where.at(key).fail("expected a single character, got " + shown(json(s)));
  }
  return s;
}

PreTokenizerStep::Prepend prepend_scheme(const json& value, const JsonWhere& where) {
  // Files written before prepend_scheme existed say add_prefix_space instead.
  if (field(value, "add_prefix_space") == false) return PreTokenizerStep::Prepend::kNever;
  const json& scheme = field(value, "prepend_scheme");
  if (scheme.is_null() || scheme == "always") return PreTokenizerStep::Prepend::kAlways;
  if (scheme == "first") return PreTokenizerStep::Prepend::kFirst;
  if (scheme == "never") return PreTokenizerStep::Prepend::kNever;
  where.at("prepend_scheme")
      .fail("expected \"always\", \"first\" or \"never\", got " + shown(scheme));
}

size_t count_field(const json& value, const char* key, const JsonWhere& where) {
  const json& v = field(value, key);
  if (!v.is_number_unsigned())
    where.at(key).fail("expected a non-negative integer, got " + shown(v));
  return v.get<size_t>();
}

void add_normalizer(const json& value, const JsonWhere& where, std::vector<NormalizerStep>& out) {
  const std::string type = type_of(value, where);
  if (type == "Sequence") {
    const json& list = array_field(value, "normalizers", where);
    for (size_t i = 0; i < list.size(); ++i) {
      add_normalizer(list[i], where.at("normalizers").at(i), out);
    }
  } else if (type == "NFC") {
    out.push_back({NormalizerStep::Kind::kNfc, "", ""});
  } else if (type == "Prepend") {
    out.push_back({NormalizerStep::Kind::kPrepend, string_field(value, "prepend", where), ""});
  } else if (type == "Replace") {
    out.push_back({NormalizerStep::Kind::kReplace, string_pattern(value, where),
                   string_field(value, "content", where)});
  } else {
    unsupported_type(type, where, "NFC, Prepend, Replace and Sequence");
  }
}

void add_pre_tokenizer(const json& value, const JsonWhere& where, PreTokenizerSpec& out) {
  const std::string type = type_of(value, where);
  if (out.byte_level) {
    where.fail("a pre-tokenizer after ByteLevel is not supported (ByteLevel must come last)");
  }
  if (type == "Sequence") {
    const json& list = array_field(value, "pretokenizers", where);
    for (size_t i = 0; i < list.size(); ++i) {
      add_pre_tokenizer(list[i], where.at("pretokenizers").at(i), out);
    }
  } else if (type == "ByteLevel") {
    if (bool_field(value, "add_prefix_space", false, where)) {
      where.at("add_prefix_space").fail("true is not supported (expected false)");
    }
    if (bool_field(value, "use_regex", true, where)) {
      out.steps.push_back({PreTokenizerStep::Kind::kGpt2Split, nullptr, "", {}, true});
    }
    out.byte_level = true;
  } else if (type == "Split") {
    const JsonWhere at = where.at("pattern");
    const json& pattern = field(value, "pattern");
    const bool literal = pattern.is_object() && pattern.contains("String");
    if (!literal && !(pattern.is_object() && pattern.contains("Regex"))) {
      at.fail("expected {\"Regex\": ...} or {\"String\": ...}, got " + shown(pattern));
    }
    const std::string text = string_field(pattern, literal ? "String" : "Regex", at);
    const json& behavior = field(value, "behavior");
    if (behavior != "Isolated") {
      where.at("behavior").fail("only \"Isolated\" is supported, got " + shown(behavior));
    }
    if (bool_field(value, "invert", false, where)) {
      where.at("invert").fail("true is not supported (expected false)");
    }
    const JsonWhere pattern_where = at.at(literal ? "String" : "Regex");
    out.steps.push_back({PreTokenizerStep::Kind::kRegexSplit,
                         std::make_shared<const RegexSplitter>(text, literal, pattern_where.str()),
                         "",
                         {},
                         true});
  } else if (type == "Metaspace") {
    out.steps.push_back({PreTokenizerStep::Kind::kMetaspace, nullptr,
                         one_character(value, "replacement", where), prepend_scheme(value, where),
                         bool_field(value, "split", true, where)});
  } else if (type == "Digits") {
    out.steps.push_back({PreTokenizerStep::Kind::kDigits,
                         nullptr,
                         "",
                         {},
                         bool_field(value, "individual_digits", false, where)});
  } else {
    unsupported_type(type, where, "ByteLevel, Split, Metaspace, Digits and Sequence");
  }
}

void add_decoder(const json& value, const JsonWhere& where, std::vector<DecoderStep>& out) {
  const std::string type = type_of(value, where);
  DecoderStep step{DecoderStep::Kind::kFuse, "", "", 0, 0, false};
  if (type == "Sequence") {
    const json& list = array_field(value, "decoders", where);
    for (size_t i = 0; i < list.size(); ++i) add_decoder(list[i], where.at("decoders").at(i), out);
    return;
  } else if (type == "ByteLevel") {
    step.kind = DecoderStep::Kind::kByteLevel;
  } else if (type == "Replace") {
    step.kind = DecoderStep::Kind::kReplace;
    step.text = string_pattern(value, where);
    step.replacement = string_field(value, "content", where);
  } else if (type == "ByteFallback") {
    step.kind = DecoderStep::Kind::kByteFallback;
  } else if (type == "Fuse") {
    step.kind = DecoderStep::Kind::kFuse;
  } else if (type == "Strip") {
    step.kind = DecoderStep::Kind::kStrip;
    step.text = one_character(value, "content", where);
    step.start = count_field(value, "start", where);
    step.stop = count_field(value, "stop", where);
  } else if (type == "Metaspace") {
    step.kind = DecoderStep::Kind::kMetaspace;
    step.text = one_character(value, "replacement", where);
    step.strip_first = prepend_scheme(value, where) != PreTokenizerStep::Prepend::kNever;
  } else {
    unsupported_type(type, where,
                     "ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace and Sequence");
  }
  out.push_back(std::move(step));
}

// The ids a template item stands for: a special token's ids, or none for the text itself.
std::vector<int32_t> special_token_ids(const std::string& name, const json& specials,
                                       const JsonWhere& where) {
  const JsonWhere at = where.at("special_tokens").at(name);
  const json& entry = field(specials, name.c_str());
  if (!entry.is_object()) at.fail("the template names this token but special_tokens lacks it");
  const json& ids = field(entry, "ids");
  if (!ids.is_array()) at.at("ids").fail("expected an array of ids, got " + shown(ids));
  std::vector<int32_t> out;
  for (const json& id : ids) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 ||
        id.get<int64_t>() > std::numeric_limits<int32_t>::max()) {
      at.at("ids").fail("expected non-negative 32-bit ids, got " + shown(ids));
    }
    out.push_back(id.get<int32_t>());
  }
  return out;
}

void add_template(const json& value, const JsonWhere& where, TemplateSpec& out) {
  if (out.present) where.fail("more than one TemplateProcessing is not supported");
  out.present = true;
  const json& single = array_field(value, "single", where);
  const json& specials = field(value, "special_tokens");
  bool seen_text = false;
  for (size_t i = 0; i < single.size(); ++i) {
    const JsonWhere at = where.at("single").at(i);
    const json& item = single[i];
    if (item.is_object() && item.contains("Sequence")) {
      const json& id = field(item["Sequence"], "id");
      if (id != "A" || seen_text) at.fail("expected one {\"Sequence\": {\"id\": \"A\"}} item");
      seen_text = true;
    } else if (item.is_object() && item.contains("SpecialToken")) {
      const std::string name = string_field(item["SpecialToken"], "id", at.at("SpecialToken"));
      const std::vector<int32_t> ids = special_token_ids(name, specials, where);
      std::vector<int32_t>& side = seen_text ? out.suffix : out.prefix;
      side.insert(side.end(), ids.begin(), ids.end());
    } else {
      at.fail("expected {\"SpecialToken\": ...} or {\"Sequence\": ...}, got " + shown(item));
    }
  }
  if (!seen_text) where.at("single").fail("the template has no {\"Sequence\": {\"id\": \"A\"}}");
  if (out.prefix.size() > 1 || out.suffix.size() > 1) {
    where.at("single").fail(
        "more than one token before or after the text is not supported (expected at most a BOS "
        "before and an EOS after)");
  }
}

void add_post_processor(const json& value, const JsonWhere& where, TemplateSpec& out) {
  const std::string type = type_of(value, where);
  if (type == "Sequence") {
    const json& list = array_field(value, "processors", where);
    for (size_t i = 0; i < list.size(); ++i) {
      add_post_processor(list[i], where.at("processors").at(i), out);
    }
  } else if (type == "TemplateProcessing") {
    add_template(value, where, out);
  } else if (type != "ByteLevel") {  // ByteLevel only trims offsets, which encode() does not return
    unsupported_type(type, where, "TemplateProcessing, ByteLevel and Sequence");
  }
}

}  // namespace

std::vector<NormalizerStep> parse_normalizer(const json& value, const JsonWhere& where) {
  std::vector<NormalizerStep> out;
  if (!value.is_null()) add_normalizer(value, where, out);
  return out;
}

PreTokenizerSpec parse_pre_tokenizer(const json& value, const JsonWhere& where) {
  PreTokenizerSpec out;
  if (!value.is_null()) add_pre_tokenizer(value, where, out);
  return out;
}

std::vector<DecoderStep> parse_decoder(const json& value, const JsonWhere& where) {
  std::vector<DecoderStep> out;
  if (!value.is_null()) add_decoder(value, where, out);
  return out;
}

TemplateSpec parse_post_processor(const json& value, const JsonWhere& where) {
  TemplateSpec out;
  if (!value.is_null()) add_post_processor(value, where, out);
  return out;
}

}  // namespace h2oflex::tokenizer
