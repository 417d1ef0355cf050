// A schema converter: turns the MCP servers' tools into the system-prompt section that teaches
// the model the tools and the call format, and formats tool results for the model. This one
// lists the tools and teaches `CALL name {json arguments}` lines (what the `detector` template
// of `rkmcp plugins new` reads).

export const schemaConverter = {
  // `toolsJson`: the JSON text of an MCP `tools/list` result's `tools` array. A thrown string
  // is the WIT `result`'s error, shown to the user.
  convert(toolsJson) {
    let tools;
    try {
      tools = JSON.parse(toolsJson);
    } catch (e) {
      throw `tools are not a JSON array: ${e.message}`;
    }
    if (!Array.isArray(tools)) throw "tools are not a JSON array";
    let prompt = "You can call these tools:\n";
    for (const t of tools) {
      const name = typeof t.name === "string" ? t.name : "?";
      const about = typeof t.description === "string" ? t.description : "";
      prompt += `- ${name}: ${about} (arguments: ${JSON.stringify(t.inputSchema ?? null)})\n`;
    }
    prompt += 'To call one, write a line: CALL name {"argument": "value"}\n';
    // No grammar or JSON schema for constrained decoding: `undefined` is the WIT `none`.
    return { systemPrompt: prompt, grammar: undefined, jsonSchema: undefined };
  },

  formatResult(call, resultJson) {
    return `RESULT ${call.name} ${resultJson}\n`;
  },
};
